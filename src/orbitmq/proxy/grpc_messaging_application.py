"""``GrpcMessagingApplication``: MessagingService's behaviours over one broker, in process
(RocketMQ's proxy ``GrpcMessagingApplication`` in local mode): each RPC is handed to the
activity that owns it, which calls the broker's processors and managers directly."""

from __future__ import annotations

from orbitmq.broker import BrokerController
from orbitmq.proxy.messaging_service import Behaviour, Context
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb


class GrpcMessagingApplication:
    """Owns the activities serving MessagingService for one ``BrokerController``.
    ``behaviours`` is the RPC table the server registers; RPCs not in it answer
    UNIMPLEMENTED. Use from the broker's event loop."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def behaviours(self) -> dict[str, Behaviour]:
        """RPC name -> behaviour, for every RPC served."""
        return {"Heartbeat": self.heartbeat}

    async def heartbeat(
        self, request: pb.HeartbeatRequest, context: Context
    ) -> pb.HeartbeatResponse:
        return pb.HeartbeatResponse(status=d.Status(code=d.OK, message="OK"))
