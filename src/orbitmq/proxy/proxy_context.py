"""``ProxyContext``: who sent one gRPC request (RocketMQ 5's proxy ``ProxyContext``): the
client's id, language and version from the x-mq-* metadata the 5.x clients send, and its
address; and ``LocalChannel``, the ``ChannelContext`` the broker's processors see for a
request the endpoint hands them in process (RocketMQ's proxy local mode ``SimpleChannel``)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Final

from orbitmq.common.message import SocketAddress
from orbitmq.protocol import RemotingCommand
from orbitmq.proxy.messaging_service import Context
from orbitmq.remoting import RemotingSendRequestError

#: The 5.x clients' metadata keys (RocketMQ's ``GrpcConstants``).
CLIENT_ID: Final = "x-mq-client-id"
LANGUAGE: Final = "x-mq-language"
CLIENT_VERSION: Final = "x-mq-client-version"
NAMESPACE: Final = "x-mq-namespace"
_UNKNOWN: Final[SocketAddress] = ("0.0.0.0", 0)
# Remoting connections count up from 1; in-process channels count down, never colliding.
_local_ids = itertools.count(-1_000_000_000, -1)


def peer_address(peer: str) -> SocketAddress:
    """grpc's peer string (``ipv4:1.2.3.4:5``, ``ipv6:[::1]:5``) as (host, port)."""
    kind, _, address = peer.partition(":")
    host, sep, port = address.rpartition(":")
    if kind not in ("ipv4", "ipv6") or not sep or not port.isdigit():
        return _UNKNOWN
    return (host.strip("[]"), int(port))


@dataclass(frozen=True, slots=True)
class ProxyContext:
    """One request's client, read once from its call. Immutable: safe anywhere."""

    client_id: str
    language: str
    client_version: str
    namespace: str
    remote: SocketAddress = field(default=_UNKNOWN)

    @classmethod
    def of(cls, context: Context) -> ProxyContext:
        metadata: dict[str, str] = {}
        for key, value in context.invocation_metadata() or ():
            metadata[key] = value if isinstance(value, str) else value.decode("latin-1")
        return cls(
            metadata.get(CLIENT_ID, ""),
            metadata.get(LANGUAGE, ""),
            metadata.get(CLIENT_VERSION, ""),
            metadata.get(NAMESPACE, ""),
            peer_address(context.peer()),
        )

    @property
    def remote_address(self) -> str:
        return f"{self.remote[0]}:{self.remote[1]}"


class LocalChannel:
    """A ``ChannelContext`` for a gRPC client seen by the broker's processors and registries:
    it carries the client's address (born host, logs, admin answers) and takes no frames
    (an in-process answer is returned, not written; oneway notices are dropped). Use from
    the broker's event loop."""

    def __init__(self, remote: SocketAddress, local: SocketAddress = _UNKNOWN) -> None:
        self._id = next(_local_ids)
        self._remote, self._local = remote, local
        self._attributes: dict[str, object] = {}

    @property
    def id(self) -> int:
        return self._id

    @property
    def remote_address(self) -> str:
        return f"{self._remote[0]}:{self._remote[1]}"

    @property
    def remote_socket_address(self) -> SocketAddress:
        return self._remote

    @property
    def local_socket_address(self) -> SocketAddress:
        return self._local

    @property
    def attributes(self) -> dict[str, object]:
        return self._attributes

    @property
    def is_active(self) -> bool:
        return True

    def write(self, command: RemotingCommand) -> bool:
        return False  # answers come back as return values in process

    def invoke_oneway(self, request: RemotingCommand) -> None:
        # The broker's notices (NOTIFY_CONSUMER_IDS_CHANGED) mean nothing to a 5.x client,
        # which rebalances nothing: dropped, as RocketMQ's proxy drops them.
        return None

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        raise RemotingSendRequestError("an in-process gRPC call takes no requests")

    def close(self) -> None:
        return None
