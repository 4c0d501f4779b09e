"""RocketMQ 5.3's recall handle: what a producer gets back from sending a delay (timer)
message, and hands to RECALL_MESSAGE (remoting) or RecallMessage (gRPC) to cancel it before
its time (RocketMQ's ``RecallMessageHandle``).

Version 1 is five space-separated fields, ``v1 <topic> <brokerName> <timestamp>
<messageId>``, base64url encoded: the message's real topic, the broker that stores it, the
time it is due (ms) and its unique id (UNIQ_KEY). Only the broker it names can act on it.
Plain values: safe anywhere."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Final

VERSION_1: Final = "v1"
_SEPARATOR: Final = " "


class RecallHandleError(ValueError):
    """A recall handle that does not decode (RocketMQ: "recall handle is invalid")."""


@dataclass(frozen=True, slots=True)
class RecallMessageHandle:
    """A decoded version 1 handle."""

    topic: str
    broker_name: str
    timestamp_str: str
    message_id: str

    def encode(self) -> str:
        raw = _SEPARATOR.join(
            (VERSION_1, self.topic, self.broker_name, self.timestamp_str, self.message_id)
        )
        return base64.urlsafe_b64encode(raw.encode()).decode("ascii")

    @property
    def timestamp_ms(self) -> int:
        """The due time, -1 when the field is not a number (never due: refused)."""
        try:
            return int(self.timestamp_str)
        except ValueError:
            return -1

    @classmethod
    def decode(cls, handle: str) -> RecallMessageHandle:
        """RecallHandleError for anything that is not a version 1 handle."""
        if not handle:
            raise RecallHandleError("recall handle is invalid")
        try:
            # Java's URL decoder takes the text with or without its padding.
            padded = handle + "=" * (-len(handle) % 4)
            raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        except (binascii.Error, UnicodeError, ValueError) as exc:
            raise RecallHandleError("recall handle is invalid") from exc
        items = raw.split(_SEPARATOR)
        if items[0] != VERSION_1 or len(items) < 5:
            raise RecallHandleError("recall handle is invalid")
        return cls(items[1], items[2], items[3], items[4])
