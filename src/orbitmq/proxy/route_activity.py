"""``RouteActivity``: QueryRoute and QueryAssignment (RocketMQ 5's proxy ``RouteActivity``),
answered from this broker's topic and group tables.

As RocketMQ's proxy does, the route names the proxy itself (this gRPC endpoint) as every
queue's broker endpoint: the client sends and receives through it. A broker serves the
queues it holds; with several brokers a 5.x client is pointed at each one's endpoint."""

from __future__ import annotations

from typing import Any, Final

from orbitmq.broker import BrokerController
from orbitmq.common.socket_address import advertised_host
from orbitmq.common.topic_message_type import TopicMessageType
from orbitmq.protocol.body.topic import TopicConfig
from orbitmq.protocol.perm_name import is_readable, is_writeable
from orbitmq.proxy.grpc_status import (
    OK_STATUS,
    GrpcProxyError,
    status,
    validate_consumer_group,
    validate_topic_name,
)
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb

#: ``TopicMessageType`` -> the message types its queues accept (``parseTopicMessageType``).
_ACCEPTED: Final[dict[TopicMessageType, list[Any]]] = {
    TopicMessageType.NORMAL: [d.NORMAL],
    TopicMessageType.FIFO: [d.FIFO],
    TopicMessageType.DELAY: [d.DELAY],
    TopicMessageType.TRANSACTION: [d.TRANSACTION],
    TopicMessageType.MIXED: [d.NORMAL, d.FIFO, d.DELAY, d.TRANSACTION],
}
#: MixAll.MASTER_ID.
MASTER_ID: Final = 0


def permission(perm: int) -> Any:
    """RocketMQ's perm bits as the gRPC Permission (``convertToPermission``)."""
    readable, writeable = is_readable(perm), is_writeable(perm)
    if readable and writeable:
        return d.READ_WRITE
    if readable:
        return d.READ
    if writeable:
        return d.WRITE
    return d.NONE


class RouteActivity:
    """Answers QueryRoute and QueryAssignment for one broker, naming ``endpoint_port`` (a
    callable: the port is known once the server is bound) as the broker's address. Holds
    no state of its own; use from the broker's event loop."""

    def __init__(self, broker: BrokerController, endpoint_port: Any) -> None:
        self.broker = broker
        self._endpoint_port = endpoint_port

    def endpoints(self) -> d.Endpoints:
        """This endpoint, as clients reach it: the broker's brokerIP1 and the gRPC port."""
        config = self.broker.broker_config
        host = config.broker_ip1 or advertised_host(config.bind_address)
        scheme = d.IPv6 if ":" in host else d.IPv4
        address = d.Address(host=host, port=int(self._endpoint_port()))
        return d.Endpoints(scheme=scheme, addresses=[address])

    def _broker(self) -> d.Broker:
        name = self.broker.broker_config.broker_name
        return d.Broker(name=name, id=MASTER_ID, endpoints=self.endpoints())

    def _topic_config(self, topic: str) -> TopicConfig:
        config = self.broker.topic_config_manager.select_topic_config(topic)
        if config is None:
            raise GrpcProxyError(
                d.TOPIC_NOT_FOUND,
                f"CODE: 17  DESC: No topic route info in name server for the topic: {topic}",
            )
        return config

    def _perm(self, config: TopicConfig) -> int:
        """The topic's perm as the route shows it: a broker that may not be written makes
        its topics read-only (RocketMQ's registration masks them with brokerPermission)."""
        broker_perm = self.broker.broker_config.broker_permission
        return config.perm if is_writeable(broker_perm) else config.perm & broker_perm

    async def query_route(self, request: pb.QueryRouteRequest, context: Any) -> Any:
        validate_topic_name(request.topic.name)
        config = self._topic_config(request.topic.name)
        accepted = _ACCEPTED.get(config.topic_message_type, [d.MESSAGE_TYPE_UNSPECIFIED])
        broker, topic, perm = self._broker(), request.topic, self._perm(config)
        reads, writes = config.read_queue_nums, config.write_queue_nums
        # genMessageQueueFromQueueData: read-only queues, then write-only, then both, ids
        # counted across the three; a topic neither readable nor writable shows NONE queues.
        read_only = write_only = both = none = 0
        if is_readable(perm) and is_writeable(perm):
            both = min(reads, writes)
            read_only, write_only = reads - both, writes - both
        elif is_writeable(perm):
            write_only = writes
        elif is_readable(perm):
            read_only = reads
        else:
            none = max(1, reads, writes)
        queues = []
        for kind, count in ((d.READ, read_only), (d.WRITE, write_only)):
            queues += [kind] * count
        queues += [d.READ_WRITE] * both + [d.NONE] * none
        return pb.QueryRouteResponse(
            status=OK_STATUS,
            message_queues=[
                d.MessageQueue(
                    topic=topic,
                    id=queue_id,
                    permission=kind,
                    broker=broker,
                    accept_message_types=accepted,
                )
                for queue_id, kind in enumerate(queues)
            ],
        )

    async def query_assignment(self, request: pb.QueryAssignmentRequest, context: Any) -> Any:
        validate_topic_name(request.topic.name)
        validate_consumer_group(request.group.name)
        config = self._topic_config(request.topic.name)
        group = self.broker.subscription_group_manager.find_subscription_group_config(
            request.group.name
        )
        fifo = bool(getattr(group, "consume_message_orderly", False))
        perm = self._perm(config)
        if not is_readable(perm) or config.read_queue_nums <= 0:
            return pb.QueryAssignmentResponse(status=status(d.FORBIDDEN, "no readable queue"))
        broker, kind = self._broker(), permission(perm)
        # A FIFO group is given every queue (orderly POP per queue); any other one queue id
        # -1: the broker pops from all of them.
        ids = range(config.read_queue_nums) if fifo else [-1]
        return pb.QueryAssignmentResponse(
            status=OK_STATUS,
            assignments=[
                d.Assignment(
                    message_queue=d.MessageQueue(
                        topic=request.topic, id=queue_id, permission=kind, broker=broker
                    )
                )
                for queue_id in ids
            ],
        )
