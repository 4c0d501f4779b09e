"""``GrpcMessagingApplication``: MessagingService's behaviours over one broker, in process
(RocketMQ's proxy ``GrpcMessagingApplication`` in local mode): each RPC is handed to the
activity that owns it, which calls the broker's processors and managers directly."""

from __future__ import annotations

from orbitmq.broker import BrokerController
from orbitmq.proxy.check_message import check_message
from orbitmq.proxy.grpc_client_services import GrpcClientServices
from orbitmq.proxy.messaging_service import Behaviour, Context
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb


class GrpcMessagingApplication:
    """Owns the activities serving MessagingService for one ``BrokerController``.
    ``behaviours`` is the RPC table the server registers; RPCs not in it answer
    UNIMPLEMENTED. Use from the broker's event loop."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        #: The clients' channels and settings, Telemetry, EndTransaction and the ACL check.
        self.clients = GrpcClientServices(broker, check_message)

    def behaviours(self) -> dict[str, Behaviour]:
        """RPC name -> behaviour, for every RPC served."""
        return self.clients.checked({"Heartbeat": self.heartbeat, **self.clients.behaviours()})

    async def heartbeat(
        self, request: pb.HeartbeatRequest, context: Context
    ) -> pb.HeartbeatResponse:
        return pb.HeartbeatResponse(status=d.Status(code=d.OK, message="OK"))
