"""FIFO consumption over gRPC: a group with consumeMessageOrderly=true receives a message
group's messages through the broker's orderly POP, one at a time (the next only once the
previous is acked), and a message handed out the group's max attempts (retryMaxTimes + 1)
goes to %DLQ%group instead of to the client, as RocketMQ 5's proxy filters a POP result."""

from __future__ import annotations

import uuid

from orbitmq.common import message_const as mc
from orbitmq.common.message_decoder import decode_message
from orbitmq.protocol.body.subscription_group import SubscriptionGroupConfig
from orbitmq.proxy.send_message_activity import consistent_hash
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from tests.integration.grpc.conftest import CLIENT_METADATA, GrpcCluster, create_topic
from tests.integration.grpc.test_grpc_receive import duration
from tests.integration.grpc.test_grpc_send_route import _java_hash, grpc_message, send

QUEUES = 8


def fifo_group(g: GrpcCluster, name: str, retry_max_times: int = 16) -> str:
    g.broker.subscription_group_manager.update_subscription_group_config(
        SubscriptionGroupConfig(
            group_name=name, consume_message_orderly=True, retry_max_times=retry_max_times
        )
    )
    return name


async def send_fifo(g: GrpcCluster, topic: str, message_group: str, count: int) -> None:
    for i in range(count):
        message = grpc_message(
            topic, f"{message_group}-{i}".encode(), message_type=d.FIFO, message_group=message_group
        )
        assert (await send(g, message)).status.code == d.OK


async def receive(
    g: GrpcCluster, topic: str, group: str, polling_s: float = 5
) -> tuple[d.Status, list[d.Message]]:
    request = pb.ReceiveMessageRequest(
        group=d.Resource(name=group),
        message_queue=d.MessageQueue(topic=d.Resource(name=topic), id=-1),
        filter_expression=d.FilterExpression(type=d.TAG, expression="*"),
        batch_size=1,
        invisible_duration=duration(30),
        long_polling_timeout=duration(polling_s),
    )
    items = [
        item async for item in g.stub.ReceiveMessage(request, metadata=CLIENT_METADATA, timeout=30)
    ]
    return items[0].status, [i.message for i in items if i.WhichOneof("content") == "message"]


async def ack(g: GrpcCluster, topic: str, group: str, message: d.Message) -> None:
    request = pb.AckMessageRequest(
        group=d.Resource(name=group),
        topic=d.Resource(name=topic),
        entries=[
            pb.AckMessageEntry(
                message_id=message.system_properties.message_id,
                receipt_handle=message.system_properties.receipt_handle,
            )
        ],
    )
    answer = await g.stub.AckMessage(request, metadata=CLIENT_METADATA)
    assert answer.status.code == d.OK, answer.status


def _groups_on_distinct_queues(count: int) -> list[str]:
    """Message group names whose hashed queues (the proxy's choice) all differ."""
    names: dict[int, str] = {}
    while len(names) < count:
        name = f"order-{uuid.uuid4().hex[:6]}"
        names.setdefault(consistent_hash(_java_hash(name), QUEUES), name)
    return list(names.values())


async def test_a_message_group_comes_in_order_one_at_a_time(grpc_cluster: GrpcCluster) -> None:
    g = grpc_cluster
    await create_topic(g.broker, "FifoRecvTopic", "FIFO", queues=QUEUES)
    group = fifo_group(g, "fifo-recv-group")
    first, second = _groups_on_distinct_queues(2)
    await send_fifo(g, "FifoRecvTopic", first, 3)
    await send_fifo(g, "FifoRecvTopic", second, 3)
    # One message of each message group: each queue is then blocked until its ack.
    held: dict[str, d.Message] = {}
    while len(held) < 2:
        status, messages = await receive(g, "FifoRecvTopic", group)
        assert status.code == d.OK, status
        for message in messages:
            assert message.system_properties.message_group not in held
            held[message.system_properties.message_group] = message
    assert {m.body for m in held.values()} == {f"{first}-0".encode(), f"{second}-0".encode()}
    status, messages = await receive(g, "FifoRecvTopic", group)
    assert (status.code, messages) == (d.MESSAGE_NOT_FOUND, []), "the next came before an ack"
    got: dict[str, list[bytes]] = {first: [held[first].body], second: [held[second].body]}
    for _ in range(2):
        for message_group in (first, second):
            await ack(g, "FifoRecvTopic", group, held[message_group])
            status, [message] = await receive(g, "FifoRecvTopic", group)
            assert status.code == d.OK
            # The acked one's successor, from the same message group: the other is held.
            assert message.system_properties.message_group == message_group
            assert message.system_properties.delivery_attempt == 1
            held[message_group] = message
            got[message_group].append(message.body)
    assert got == {m: [f"{m}-{i}".encode() for i in range(3)] for m in (first, second)}


async def test_a_message_past_its_max_attempts_lands_in_the_dlq(grpc_cluster: GrpcCluster) -> None:
    g = grpc_cluster
    await create_topic(g.broker, "FifoDlqTopic", "FIFO", queues=QUEUES)
    # retryMaxTimes 1: two delivery attempts, as the consumer settings' backoff policy says.
    group = fifo_group(g, "fifo-dlq-group", retry_max_times=1)
    await send_fifo(g, "FifoDlqTopic", "poison", 2)
    for attempt in (1, 2):
        status, [message] = await receive(g, "FifoDlqTopic", group)
        assert status.code == d.OK, status
        assert message.body == b"poison-0"
        assert message.system_properties.delivery_attempt == attempt
        # A failed consumption: visible again at once (as the clients nack).
        changed = await g.stub.ChangeInvisibleDuration(
            pb.ChangeInvisibleDurationRequest(
                group=d.Resource(name=group),
                topic=d.Resource(name="FifoDlqTopic"),
                receipt_handle=message.system_properties.receipt_handle,
                invisible_duration=duration(0),
                message_id=message.system_properties.message_id,
            ),
            metadata=CLIENT_METADATA,
        )
        assert changed.status.code == d.OK, changed.status
    # The third hand-out goes to the dead letter queue; the message group moves on.
    nexts: list[d.Message] = []
    while not nexts:
        status, nexts = await receive(g, "FifoDlqTopic", group)
        assert status.code in (d.OK, d.MESSAGE_NOT_FOUND), status
    [message] = nexts
    assert (message.body, message.system_properties.delivery_attempt) == (b"poison-1", 1)
    dlq = f"%DLQ%{group}"
    store = g.broker.message_store
    assert store.get_max_offset_in_queue(dlq, 0) == 1
    unit = store.get_message_unit_in_queue(dlq, 0, 0)
    assert unit is not None
    record = store.select_one_message_by_offset(unit[0], unit[1])
    assert record is not None
    dead = decode_message(record)
    assert dead.body == b"poison-0"
    assert dead.properties[mc.PROPERTY_SHARDING_KEY] == "poison"


async def test_forwarding_to_the_dlq_lets_the_message_group_go_on(
    grpc_cluster: GrpcCluster,
) -> None:
    """What a FIFO PushConsumer does after its local retries: ForwardMessageToDeadLetterQueue
    moves the message to %DLQ%group and acks it, and the group's next message comes."""
    g = grpc_cluster
    await create_topic(g.broker, "FifoForwardTopic", "FIFO", queues=QUEUES)
    group = fifo_group(g, "fifo-forward-group")
    await send_fifo(g, "FifoForwardTopic", "forwarded", 2)
    status, [message] = await receive(g, "FifoForwardTopic", group)
    assert (status.code, message.body) == (d.OK, b"forwarded-0")
    forwarded = await g.stub.ForwardMessageToDeadLetterQueue(
        pb.ForwardMessageToDeadLetterQueueRequest(
            group=d.Resource(name=group),
            topic=d.Resource(name="FifoForwardTopic"),
            receipt_handle=message.system_properties.receipt_handle,
            message_id=message.system_properties.message_id,
            delivery_attempt=1,
            max_delivery_attempts=17,
        ),
        metadata=CLIENT_METADATA,
    )
    assert forwarded.status.code == d.OK, forwarded.status
    status, [following] = await receive(g, "FifoForwardTopic", group)
    assert (status.code, following.body) == (d.OK, b"forwarded-1")
    assert g.broker.message_store.get_max_offset_in_queue(f"%DLQ%{group}", 0) == 1
