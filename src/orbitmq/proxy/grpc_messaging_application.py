"""``GrpcMessagingApplication``: MessagingService's behaviours over one broker, in process
(RocketMQ's proxy ``GrpcMessagingApplication`` in local mode): each RPC is handed to the
activity that owns it, which calls the broker's processors and managers directly.

Every unary RPC answers as RocketMQ's proxy does: a refusal or a failure is the response's
``status`` (transport status OK), never a gRPC error; bytes that are not the RPC's message
are INVALID_ARGUMENT (``malformed_request``), unknown RPCs grpc's own UNIMPLEMENTED."""

from __future__ import annotations

import functools
from typing import Any

from orbitmq.broker import BrokerController
from orbitmq.proxy.check_message import check_message
from orbitmq.proxy.client_activity import ClientActivity
from orbitmq.proxy.consumer_activity import ConsumerActivity
from orbitmq.proxy.grpc_client_services import GrpcClientServices, half_transaction_id
from orbitmq.proxy.grpc_status import status_of
from orbitmq.proxy.messaging_service import METHODS, Behaviour, Context, UnaryBehaviour
from orbitmq.proxy.recall_message_activity import RecallMessageActivity
from orbitmq.proxy.route_activity import RouteActivity
from orbitmq.proxy.send_message_activity import SendMessageActivity


def answering(name: str, behaviour: UnaryBehaviour) -> UnaryBehaviour:
    """``behaviour`` whose exceptions become the response's status (``ResponseWriter``)."""
    response_type: Any = METHODS[name].response_type

    @functools.wraps(behaviour)
    async def answer(request: Any, context: Context) -> Any:
        try:
            return await behaviour(request, context)
        except Exception as exc:  # every failure is answered, as RocketMQ's proxy does
            return response_type(status=status_of(exc))

    return answer


class GrpcMessagingApplication:
    """Owns the activities serving MessagingService for one ``BrokerController``.
    ``behaviours`` is the RPC table the server registers; RPCs not in it answer
    UNIMPLEMENTED. ``endpoint_port`` tells the bound gRPC port (routes name it). Use from
    the broker's event loop."""

    def __init__(self, broker: BrokerController, endpoint_port: Any = lambda: 0) -> None:
        self.broker = broker
        #: The clients' channels and settings (filled by Telemetry), Telemetry,
        #: EndTransaction and the checks in front of every RPC (malformed requests, ACL).
        self.clients = GrpcClientServices(broker, check_message)
        self.route = RouteActivity(broker, endpoint_port)
        self.send = SendMessageActivity(broker, transaction_id_of=half_transaction_id)
        self.consumer = ConsumerActivity(broker)
        self.recall = RecallMessageActivity(broker)
        # A client that terminates gets its auto-renewed messages back to its group.
        self.client = ClientActivity(
            broker,
            self.clients.settings,
            self.clients.channels,
            on_terminated=self.consumer.renewals.clear_client,
        )
        self.clients.telemetry.on_unregistered = self.consumer.renewals.clear_client

    async def start(self) -> None:
        """The background work of the activities (receipt handle renewal)."""
        self.consumer.renewals.start()

    async def stop(self) -> None:
        await self.consumer.renewals.stop()

    def behaviours(self) -> dict[str, Behaviour]:
        """RPC name -> behaviour, for every RPC served."""
        unary: dict[str, UnaryBehaviour] = {
            "QueryRoute": self.route.query_route,
            "QueryAssignment": self.route.query_assignment,
            "SendMessage": self.send.send_message,
            "Heartbeat": self.client.heartbeat,
            "NotifyClientTermination": self.client.notify_client_termination,
            "AckMessage": self.consumer.ack_message,
            "ChangeInvisibleDuration": self.consumer.change_invisible_duration,
            "ForwardMessageToDeadLetterQueue": self.consumer.forward_message_to_dead_letter_queue,
            "EndTransaction": self.clients.end_transaction_behaviour,
            "RecallMessage": self.recall.recall_message,
        }
        served: dict[str, Behaviour] = {
            name: answering(name, behaviour) for name, behaviour in unary.items()
        }
        # Its failures are answered inside the stream (a status item), never as a gRPC error.
        served["ReceiveMessage"] = self.consumer.receive_message
        served["Telemetry"] = self.clients.telemetry.telemetry
        return self.clients.checked(served)
