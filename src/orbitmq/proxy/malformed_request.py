"""Requests that are not the protobuf message their RPC takes.

grpc answers a request its deserializer cannot parse with UNKNOWN and the exception's name;
the endpoint answers INVALID_ARGUMENT naming the message type instead, as it answers any
other bad request. The deserializer returns a ``MalformedRequest`` rather than raising, and
the step in front of each behaviour (``grpc_acl_pipeline``; Telemetry for each command of its
stream) ends the call with that status before anything else looks at the request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.message import DecodeError, Message


@dataclass(frozen=True, slots=True)
class MalformedRequest:
    """What arrived instead of a ``type_name`` message, and why it is not one."""

    type_name: str
    reason: str

    @property
    def details(self) -> str:
        return f"malformed {self.type_name}: {self.reason}"


def tolerant_deserializer(message_type: type[Message]) -> Callable[[bytes], object]:
    """``message_type.FromString`` that returns a MalformedRequest for bytes it cannot parse."""
    name = message_type.DESCRIPTOR.full_name

    def parse(data: bytes) -> object:
        try:
            return message_type.FromString(data)
        except DecodeError as exc:
            return MalformedRequest(name, str(exc) or "not a protobuf message")

    return parse
