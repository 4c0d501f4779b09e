"""``GrpcEndpoint``: the broker's gRPC endpoint (``grpcServerPort``): the application over
the broker and its server, started after the broker and stopped before it."""

from __future__ import annotations

from orbitmq.broker import BrokerController
from orbitmq.common.lifetime import AsyncLifetime
from orbitmq.proxy.grpc_messaging_application import GrpcMessagingApplication
from orbitmq.proxy.grpc_server import GrpcServer

#: grpcServerPort's value that turns the endpoint off.
GRPC_OFF = -1


class GrpcEndpoint(AsyncLifetime):
    """Owns the ``GrpcMessagingApplication`` and ``GrpcServer`` of one started broker,
    listening on its bindAddress and grpcServerPort (0: any free port). Use from the
    broker's event loop."""

    def __init__(self, broker: BrokerController, port: int | None = None) -> None:
        """``port``: overrides the broker's grpcServerPort."""
        config = broker.broker_config
        self.broker = broker
        requested = config.grpc_server_port if port is None else port
        self.application = GrpcMessagingApplication(broker, lambda: self.port)
        self.server: GrpcServer = GrpcServer(
            config.bind_address, requested, self.application.behaviours()
        )

    @property
    def port(self) -> int:
        """The bound port, once started."""
        return self.server.port

    @property
    def address(self) -> str:
        """``host:port`` as clients reach it (the broker's brokerIP1)."""
        return f"{self.broker.broker_config.broker_ip1}:{self.port}"

    async def start(self) -> None:
        await self.server.start()

    async def _stop(self) -> None:
        await self.stop()

    async def stop(self) -> None:
        await self.server.stop()


async def start_grpc_endpoint(broker: BrokerController) -> GrpcEndpoint | None:
    """The started endpoint of a started broker, or None when grpcServerPort is -1."""
    if broker.broker_config.grpc_server_port == GRPC_OFF:
        return None
    endpoint = GrpcEndpoint(broker)
    await endpoint.start()
    return endpoint
