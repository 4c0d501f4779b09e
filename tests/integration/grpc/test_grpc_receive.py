"""ReceiveMessage (server streaming, long polling), AckMessage, ChangeInvisibleDuration and
ForwardMessageToDeadLetterQueue over a real gRPC channel into an in-process broker's POP
processors, with the answers RocketMQ 5's proxy gives; and messages crossing protocols: sent
by OrbitMQ's remoting Producer, received over gRPC with body, tag, keys, message id and user
properties intact."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from google.protobuf.duration_pb2 import Duration

from orbitmq.client import Producer
from orbitmq.common import Message
from orbitmq.proxy.receipt_handle import decode_receipt_handle
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from tests.eventually import eventually_async
from tests.integration.grpc.conftest import CLIENT_METADATA, GrpcCluster, create_topic

GROUP = "grpc-pop-group"


def duration(seconds: float) -> Duration:
    return Duration(seconds=int(seconds), nanos=int(seconds % 1 * 1e9))


async def produce(g: GrpcCluster, topic: str, count: int) -> list[str]:
    """``count`` messages through OrbitMQ's remoting Producer; their unique ids."""
    ids = []
    async with Producer("grpc-pop-pg", namesrv_addr=g.cluster.namesrv_addr) as producer:
        for i in range(count):
            message = Message(topic, b"body-%d" % i)
            message.tags = f"tag-{i % 2}"
            message.keys = [f"key-{i}"]
            message.properties["seq"] = str(i)
            ids.append((await producer.send(message)).msg_id)
    return ids


async def receive(
    g: GrpcCluster,
    topic: str,
    *,
    batch: int = 32,
    invisible_s: float = 30,
    polling_s: float = 5,
    **fields: Any,
) -> tuple[d.Status, list[d.Message], bool]:
    """One ReceiveMessage: its status, its messages, and whether it ended with the delivery
    timestamp (as the proxy's stream does)."""
    request = pb.ReceiveMessageRequest(
        group=d.Resource(name=GROUP),
        message_queue=d.MessageQueue(topic=d.Resource(name=topic), id=-1),
        filter_expression=d.FilterExpression(type=d.TAG, expression="*"),
        batch_size=batch,
        invisible_duration=duration(invisible_s),
        long_polling_timeout=duration(polling_s),
        **fields,
    )
    items = [
        item async for item in g.stub.ReceiveMessage(request, metadata=CLIENT_METADATA, timeout=30)
    ]
    kinds = [item.WhichOneof("content") for item in items]
    assert kinds[0] == "status", kinds
    assert set(kinds[1:-1]) <= {"message"}, kinds
    return items[0].status, [i.message for i in items[1:-1]], kinds[-1] == "delivery_timestamp"


async def ack(g: GrpcCluster, topic: str, *messages: d.Message) -> pb.AckMessageResponse:
    request = pb.AckMessageRequest(
        group=d.Resource(name=GROUP),
        topic=d.Resource(name=topic),
        entries=[
            pb.AckMessageEntry(
                message_id=m.system_properties.message_id,
                receipt_handle=m.system_properties.receipt_handle,
            )
            for m in messages
        ],
    )
    return await g.stub.AckMessage(request, metadata=CLIENT_METADATA)


async def test_sent_over_remoting_received_over_grpc_and_acked(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "PopTopic")
    ids = await produce(grpc_cluster, "PopTopic", 4)
    got: list[d.Message] = []
    while len(got) < 4:
        status, messages, ended = await receive(grpc_cluster, "PopTopic")
        assert status.code == d.OK and ended, status
        got += messages
    by_id = {m.system_properties.message_id: m for m in got}
    assert sorted(by_id) == sorted(ids)
    for i, message_id in enumerate(ids):
        message = by_id[message_id]
        assert message.topic.name == "PopTopic"
        assert message.body == b"body-%d" % i
        assert message.system_properties.tag == f"tag-{i % 2}"
        assert list(message.system_properties.keys) == [f"key-{i}"]
        assert dict(message.user_properties) == {"seq": str(i)}
        assert message.system_properties.delivery_attempt == 1
        assert message.system_properties.message_type == d.NORMAL
        handle = decode_receipt_handle(message.system_properties.receipt_handle)
        assert handle.extra.queue_offset == message.system_properties.queue_offset
    acked = await ack(grpc_cluster, "PopTopic", *got)
    assert acked.status.code == d.OK
    assert [e.status.code for e in acked.entries] == [d.OK] * 4
    # Acked: nothing comes back (the shortest long polling the proxy allows, 5 s).
    status, messages, _ = await receive(grpc_cluster, "PopTopic", polling_s=5)
    assert (status.code, status.message, messages) == (d.MESSAGE_NOT_FOUND, "no new message", [])


async def test_long_polling_answers_when_a_message_arrives(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "PollTopic")
    receiving = asyncio.create_task(receive(grpc_cluster, "PollTopic", polling_s=15))
    long_polling = grpc_cluster.broker.pop.long_polling
    await eventually_async(lambda: long_polling.held_count, what="the receive held")
    assert not receiving.done()
    began = time.monotonic()
    await produce(grpc_cluster, "PollTopic", 1)
    status, messages, _ = await receiving
    assert status.code == d.OK
    assert [m.body for m in messages] == [b"body-0"]
    assert time.monotonic() - began < 10  # woken by the message, not by the timeout


async def test_change_invisible_duration_brings_the_message_back(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "ChangeTopic")
    await produce(grpc_cluster, "ChangeTopic", 1)
    _, [message], _ = await receive(grpc_cluster, "ChangeTopic")
    request = pb.ChangeInvisibleDurationRequest(
        group=d.Resource(name=GROUP),
        topic=d.Resource(name="ChangeTopic"),
        receipt_handle=message.system_properties.receipt_handle,
        invisible_duration=duration(1),
        message_id=message.system_properties.message_id,
    )
    changed = await grpc_cluster.stub.ChangeInvisibleDuration(request, metadata=CLIENT_METADATA)
    assert changed.status.code == d.OK
    assert changed.receipt_handle != message.system_properties.receipt_handle
    # Visible again a second later, as a second delivery attempt.
    again: list[d.Message] = []
    while not again:
        _, again, _ = await receive(grpc_cluster, "ChangeTopic", polling_s=5)
    [back] = again
    assert back.body == message.body
    assert back.system_properties.delivery_attempt == 2
    assert (await ack(grpc_cluster, "ChangeTopic", back)).status.code == d.OK


async def test_forward_to_dead_letter_queue(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "DlqTopic")
    [message_id] = await produce(grpc_cluster, "DlqTopic", 1)
    _, [message], _ = await receive(grpc_cluster, "DlqTopic")
    request = pb.ForwardMessageToDeadLetterQueueRequest(
        group=d.Resource(name=GROUP),
        topic=d.Resource(name="DlqTopic"),
        receipt_handle=message.system_properties.receipt_handle,
        message_id=message_id,
        delivery_attempt=1,
        max_delivery_attempts=16,
    )
    forwarded = await grpc_cluster.stub.ForwardMessageToDeadLetterQueue(
        request, metadata=CLIENT_METADATA
    )
    assert forwarded.status.code == d.OK, forwarded.status
    dlq = grpc_cluster.broker.topic_config_manager.select_topic_config(f"%DLQ%{GROUP}")
    assert dlq is not None
    store = grpc_cluster.broker.message_store
    assert store.get_max_offset_in_queue(f"%DLQ%{GROUP}", 0) == 1


async def test_receipt_handle_and_invisible_time_refusals(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "RefuseTopic")
    forged = d.Message()
    forged.system_properties.message_id = "X"
    forged.system_properties.receipt_handle = "not a handle"
    refused = await ack(grpc_cluster, "RefuseTopic", forged)
    [entry] = refused.entries
    assert entry.status.code == d.INVALID_RECEIPT_HANDLE
    assert refused.status.code == d.INVALID_RECEIPT_HANDLE
    # A handle whose invisible time is over: the message may be another consumer's now.
    forged.system_properties.receipt_handle = "0 1000 30000 0 0 broker-a 0 0 0"
    expired = await ack(grpc_cluster, "RefuseTopic", forged)
    assert (expired.entries[0].status.code, expired.entries[0].status.message) == (
        d.INVALID_RECEIPT_HANDLE,
        "receipt handle is expired",
    )
    status, _, ended = await receive(grpc_cluster, "RefuseTopic", invisible_s=1)
    assert (status.code, status.message) == (
        d.ILLEGAL_INVISIBLE_TIME,
        "the invisibleTime is too small. min is 10000",
    )
    assert ended
    bad_sql = pb.ReceiveMessageRequest(
        group=d.Resource(name=GROUP),
        message_queue=d.MessageQueue(topic=d.Resource(name="RefuseTopic")),
        filter_expression=d.FilterExpression(type=d.SQL, expression="a >>> ("),
        invisible_duration=duration(30),
    )
    items = [i async for i in grpc_cluster.stub.ReceiveMessage(bad_sql, timeout=30)]
    assert items[0].status.code == d.ILLEGAL_FILTER_EXPRESSION
    bad_group = pb.ReceiveMessageRequest(
        group=d.Resource(name=""),
        message_queue=d.MessageQueue(topic=d.Resource(name="RefuseTopic")),
        invisible_duration=duration(30),
    )
    items = [i async for i in grpc_cluster.stub.ReceiveMessage(bad_group, timeout=30)]
    assert items[0].status.code == d.ILLEGAL_CONSUMER_GROUP


async def test_a_receive_given_up_by_its_client_pops_nothing(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "GoneTopic")
    request = pb.ReceiveMessageRequest(
        group=d.Resource(name=GROUP),
        message_queue=d.MessageQueue(topic=d.Resource(name="GoneTopic"), id=-1),
        filter_expression=d.FilterExpression(type=d.TAG, expression="*"),
        batch_size=32,
        invisible_duration=duration(30),
        long_polling_timeout=duration(15),
    )
    call = grpc_cluster.stub.ReceiveMessage(request, metadata=CLIENT_METADATA, timeout=30)
    long_polling = grpc_cluster.broker.pop.long_polling
    await eventually_async(lambda: long_polling.held_count, what="the receive held")
    call.cancel()
    # The message that wakes the held request after its client left goes to the next one:
    # not popped at all when the broker heard of the cancel first, else handed back within
    # a second (not after the 30 s it was popped for).
    await produce(grpc_cluster, "GoneTopic", 1)
    status, messages, _ = await receive(grpc_cluster, "GoneTopic")
    assert status.code == d.OK
    assert [m.body for m in messages] == [b"body-0"]
    assert messages[0].system_properties.delivery_attempt in (1, 2)


async def test_change_and_forward_refusals(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "RefuseTopic2")
    change = pb.ChangeInvisibleDurationRequest(
        group=d.Resource(name=GROUP),
        topic=d.Resource(name="RefuseTopic2"),
        receipt_handle="forged",
        invisible_duration=duration(5),
    )
    forged = await grpc_cluster.stub.ChangeInvisibleDuration(change, metadata=CLIENT_METADATA)
    assert forged.status.code == d.INVALID_RECEIPT_HANDLE
    change.invisible_duration.CopyFrom(duration(13 * 3600))
    too_long = await grpc_cluster.stub.ChangeInvisibleDuration(change, metadata=CLIENT_METADATA)
    assert (too_long.status.code, too_long.status.message) == (
        d.ILLEGAL_INVISIBLE_TIME,
        "the invisibleTime is too large. max is 43200000",
    )
    forward = pb.ForwardMessageToDeadLetterQueueRequest(
        group=d.Resource(name=GROUP),
        topic=d.Resource(name="RefuseTopic2"),
        receipt_handle="0 1000 30000 0 0 broker-a 0 0 0",
    )
    expired = await grpc_cluster.stub.ForwardMessageToDeadLetterQueue(
        forward, metadata=CLIENT_METADATA
    )
    assert (expired.status.code, expired.status.message) == (
        d.INVALID_RECEIPT_HANDLE,
        "receipt handle is expired",
    )


async def test_a_handle_of_another_broker_is_refused_and_acks_nothing(
    grpc_cluster: GrpcCluster,
) -> None:
    """A well-formed, unexpired handle naming another broker: refused with the reason; the
    message popped here stays unacked (it comes back after its invisible time)."""
    await create_topic(grpc_cluster.broker, "ForeignTopic")
    await produce(grpc_cluster, "ForeignTopic", 1)
    _, [message], _ = await receive(grpc_cluster, "ForeignTopic")
    handle = decode_receipt_handle(message.system_properties.receipt_handle)
    revive = grpc_cluster.broker.pop.revive_service
    assert revive.in_flight == 1
    received = message.system_properties.receipt_handle
    message.system_properties.receipt_handle = handle.encode().replace(" broker-a ", " broker-z ")
    refused = await ack(grpc_cluster, "ForeignTopic", message)
    [entry] = refused.entries
    assert entry.status.code == d.INVALID_RECEIPT_HANDLE
    assert "broker-z" in entry.status.message
    assert revive.in_flight == 1
    message.system_properties.receipt_handle = received
    assert (await ack(grpc_cluster, "ForeignTopic", message)).status.code == d.OK
    assert revive.in_flight == 0
