"""``GrpcServer``: the grpc.aio server that serves MessagingService on the broker's event
loop (RocketMQ's proxy ``GrpcServer``), on ``grpcServerPort``."""

from __future__ import annotations

import logging
from collections.abc import Mapping

import grpc.aio

from orbitmq.common.lifetime import AsyncLifetime
from orbitmq.proxy.messaging_service import SERVICE_NAME, Behaviour, method_handlers

log = logging.getLogger(__name__)

#: The largest request accepted (RocketMQ's proxy grpcMaxInboundMessageSize: 130 MiB): a
#: batch of messages of up to 4 MiB each; grpc answers RESOURCE_EXHAUSTED above it.
MAX_INBOUND_MESSAGE_BYTES = 130 * 1024 * 1024
#: How long ``stop`` lets calls in flight finish before cancelling them.
STOP_GRACE_S = 1.0


class GrpcServer(AsyncLifetime):
    """Owns one grpc.aio server on ``host:port`` (port 0: any free port; ``port`` tells the
    bound one after ``start``) serving ``behaviours`` (RPC name -> behaviour; the others
    answer UNIMPLEMENTED). Its calls run as tasks of the loop that called ``start``: use it
    from that loop only."""

    def __init__(
        self,
        host: str,
        port: int,
        behaviours: Mapping[str, Behaviour],
        *,
        max_inbound_message_bytes: int = MAX_INBOUND_MESSAGE_BYTES,
    ) -> None:
        self.host, self._requested_port = host, port
        self._behaviours = dict(behaviours)
        self._max_inbound = max_inbound_message_bytes
        self._server: grpc.aio.Server | None = None
        self._port = 0

    @property
    def port(self) -> int:
        """The bound port, once started."""
        return self._port

    async def start(self) -> None:
        """Bind and serve. OSError when the port cannot be bound (busy, or no such address)."""
        server = grpc.aio.server(
            options=[
                # grpc sets SO_REUSEPORT by default on Linux: two brokers could then share a
                # port silently. A busy port must fail, as the remoting ports do.
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", self._max_inbound),
            ]
        )
        # Registered handlers are looked up without the generic handler's per-call search.
        server.add_registered_method_handlers(  # type: ignore[attr-defined]
            SERVICE_NAME, method_handlers(self._behaviours)
        )
        address = _address(self.host, self._requested_port)
        try:
            self._port = server.add_insecure_port(address)
        except RuntimeError as exc:
            raise OSError(f"gRPC server: cannot listen on {address} ({exc})") from exc
        await server.start()
        self._server = server
        log.info("gRPC MessagingService listening on %s", _address(self.host, self._port))

    async def _stop(self) -> None:
        await self.stop()

    async def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop accepting, let calls in flight finish for ``grace_s``, then cancel them."""
        server, self._server = self._server, None
        if server is not None:
            await server.stop(grace_s)


def _address(host: str, port: int) -> str:
    """grpc's listening address: IPv6 literals in brackets."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
