"""The gRPC endpoint beside a started broker (grpcServerPort), for ``orbitmq start`` and
``orbitmq broker``: started when the grpc extra is installed and the port is not -1."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from orbitmq.broker import BrokerController


async def start_grpc(broker: BrokerController) -> tuple[str, Callable[[], Awaitable[None]]]:
    """Start the endpoint of a started ``broker``: the ready line's words ("gRPC host:port",
    "gRPC off", "gRPC off (not installed)") and its stop. OSError when its port is busy."""
    if broker.broker_config.grpc_server_port == -1:
        return "gRPC off", _nothing
    try:
        # grpcio and protobuf are the grpc extra's: without them the broker still runs.
        from orbitmq.proxy import start_grpc_endpoint  # noqa: PLC0415
    except ImportError:
        return "gRPC off (not installed)", _nothing
    endpoint = await start_grpc_endpoint(broker)
    if endpoint is None:
        return "gRPC off", _nothing
    return f"gRPC {endpoint.address}", endpoint.stop


async def _nothing() -> None:
    return None
