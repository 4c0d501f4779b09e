"""QueryRoute, QueryAssignment and SendMessage over a real gRPC channel into an in-process
broker, with the answers RocketMQ 5's proxy gives (status codes and messages), and messages
crossing protocols: sent over gRPC, read by OrbitMQ's remoting consumer with body, tag, keys,
message id and user properties intact."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from orbitmq.client import LitePullConsumer
from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc
from orbitmq.proxy.send_message_activity import consistent_hash
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from tests.integration.grpc.conftest import CLIENT_METADATA, GrpcCluster, create_topic

WAIT_S = 20.0


def grpc_message(topic: str, body: bytes, **system: Any) -> d.Message:
    message = d.Message(topic=d.Resource(name=topic), body=body)
    message.system_properties.message_id = system.pop("message_id", uuid.uuid4().hex.upper())
    message.system_properties.message_type = system.pop("message_type", d.NORMAL)
    for key, value in system.items():
        if key == "keys":
            message.system_properties.keys.extend(value)
        elif key == "user_properties":
            message.user_properties.update(value)
        elif isinstance(value, Timestamp):
            getattr(message.system_properties, key).CopyFrom(value)
        else:
            setattr(message.system_properties, key, value)
    return message


async def send(g: GrpcCluster, *messages: d.Message) -> pb.SendMessageResponse:
    return await g.stub.SendMessage(
        pb.SendMessageRequest(messages=messages), metadata=CLIENT_METADATA, timeout=10
    )


async def pull_all(g: GrpcCluster, topic: str, count: int) -> list[MessageExt]:
    """Every message of ``topic``, read by OrbitMQ's remoting LitePullConsumer."""
    consumer = LitePullConsumer(f"cg-{uuid.uuid4().hex[:8]}", namesrv_addr=g.cluster.namesrv_addr)
    consumer.subscribe(topic)
    got: list[MessageExt] = []
    await consumer.start()
    try:
        async with asyncio.timeout(WAIT_S):
            while len(got) < count:
                got.extend(await consumer.poll(timeout_s=1.0))
    finally:
        await consumer.shutdown()
    return got


async def test_query_route_lists_every_queue_with_this_endpoint(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "RouteTopic", queues=3, read_queues=4)
    response = await grpc_cluster.stub.QueryRoute(
        pb.QueryRouteRequest(topic=d.Resource(name="RouteTopic")), metadata=CLIENT_METADATA
    )
    assert response.status.code == d.OK
    queues = response.message_queues
    # One read-only queue, then three read-write ones (genMessageQueueFromQueueData).
    assert [q.id for q in queues] == [0, 1, 2, 3]
    assert [q.permission for q in queues] == [d.READ, d.READ_WRITE, d.READ_WRITE, d.READ_WRITE]
    for queue in queues:
        assert queue.broker.name == "broker-a"
        assert queue.broker.id == 0
        [address] = queue.broker.endpoints.addresses
        assert (address.host, address.port) == ("127.0.0.1", grpc_cluster.endpoint.port)
        assert list(queue.accept_message_types) == [d.NORMAL]


async def test_query_route_of_a_missing_or_bad_topic(grpc_cluster: GrpcCluster) -> None:
    missing = await grpc_cluster.stub.QueryRoute(
        pb.QueryRouteRequest(topic=d.Resource(name="NoSuchTopic"))
    )
    assert missing.status.code == d.TOPIC_NOT_FOUND
    assert "NoSuchTopic" in missing.status.message
    bad = await grpc_cluster.stub.QueryRoute(pb.QueryRouteRequest(topic=d.Resource(name="a b")))
    assert bad.status.code == d.ILLEGAL_TOPIC
    system = await grpc_cluster.stub.QueryRoute(
        pb.QueryRouteRequest(topic=d.Resource(name="SCHEDULE_TOPIC_XXXX"))
    )
    assert (system.status.code, system.status.message) == (
        d.ILLEGAL_TOPIC,
        "cannot access system topic",
    )


async def test_query_assignment(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "AssignTopic")
    request = pb.QueryAssignmentRequest(
        topic=d.Resource(name="AssignTopic"), group=d.Resource(name="assign-group")
    )
    response = await grpc_cluster.stub.QueryAssignment(request, metadata=CLIENT_METADATA)
    assert response.status.code == d.OK
    [assignment] = response.assignments
    assert assignment.message_queue.id == -1
    assert assignment.message_queue.permission == d.READ_WRITE
    assert assignment.message_queue.broker.endpoints.addresses[0].port == (
        grpc_cluster.endpoint.port
    )
    # A topic nobody may read has no assignment: FORBIDDEN "no readable queue".
    await create_topic(grpc_cluster.broker, "WriteOnlyTopic", perm=2)
    request.topic.name = "WriteOnlyTopic"
    refused = await grpc_cluster.stub.QueryAssignment(request)
    assert (refused.status.code, refused.status.message) == (d.FORBIDDEN, "no readable queue")
    request.group.name = ""
    blank = await grpc_cluster.stub.QueryAssignment(request)
    assert blank.status.code == d.ILLEGAL_CONSUMER_GROUP


async def test_sent_over_grpc_read_over_remoting_intact(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "CrossTopic")
    sent = [
        grpc_message(
            "CrossTopic",
            b"body-%d" % i,
            tag=f"tag-{i % 2}",
            keys=[f"key-{i}", f"alt-{i}"],
            user_properties={"seq": str(i), "who": "grpc"},
        )
        for i in range(6)
    ]
    for message in sent:
        response = await send(grpc_cluster, message)
        assert response.status.code == d.OK, response.status
        [entry] = response.entries
        assert entry.status.code == d.OK
        assert entry.message_id == message.system_properties.message_id
    got = {m.unique_key: m for m in await pull_all(grpc_cluster, "CrossTopic", len(sent))}
    for i, message in enumerate(sent):
        stored = got[message.system_properties.message_id]
        assert stored.body == b"body-%d" % i
        assert stored.tags == f"tag-{i % 2}"
        assert stored.keys == [f"key-{i}", f"alt-{i}"]
        assert stored.properties["seq"] == str(i)
        assert stored.properties["who"] == "grpc"
        # The topic is the producer group (the proxy's choice, for transaction checks).
        assert stored.properties[mc.PROPERTY_PRODUCER_GROUP] == "CrossTopic"


async def test_a_batch_is_stored_whole_in_one_queue(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "BatchTopic")
    batch = [grpc_message("BatchTopic", b"b-%d" % i, tag="t") for i in range(3)]
    response = await send(grpc_cluster, *batch)
    assert response.status.code == d.OK
    assert [e.message_id for e in response.entries] == [
        m.system_properties.message_id for m in batch
    ]
    offsets = [e.offset for e in response.entries]
    assert offsets == list(range(offsets[0], offsets[0] + 3))
    got = await pull_all(grpc_cluster, "BatchTopic", 3)
    assert sorted(m.body for m in got) == [b"b-0", b"b-1", b"b-2"]
    assert len({m.queue_id for m in got}) == 1


async def test_fifo_message_group_is_the_sharding_key_on_its_hashed_queue(
    grpc_cluster: GrpcCluster,
) -> None:
    await create_topic(grpc_cluster.broker, "FifoTopic", "FIFO", queues=8)
    for i in range(4):
        message = grpc_message(
            "FifoTopic", b"f-%d" % i, message_type=d.FIFO, message_group="order-42"
        )
        assert (await send(grpc_cluster, message)).status.code == d.OK
    got = await pull_all(grpc_cluster, "FifoTopic", 4)
    assert {m.properties[mc.PROPERTY_SHARDING_KEY] for m in got} == {"order-42"}
    # One queue, in order: the group's hash picks it (Guava's consistentHash, as the proxy).
    assert {m.queue_id for m in got} == {consistent_hash(_java_hash("order-42"), 8)}
    assert [m.body for m in sorted(got, key=lambda m: m.queue_offset)] == [
        b"f-0",
        b"f-1",
        b"f-2",
        b"f-3",
    ]


def _java_hash(text: str) -> int:
    h = 0
    for c in text:
        h = (31 * h + ord(c)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


async def test_delivery_timestamp_makes_a_timer_message(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "DelayTopic", "DELAY")
    deliver_ms = int(time.time() * 1000) + 2000
    at = Timestamp(seconds=deliver_ms // 1000, nanos=(deliver_ms % 1000) * 1_000_000)
    message = grpc_message("DelayTopic", b"later", message_type=d.DELAY, delivery_timestamp=at)
    sent_at = time.monotonic()
    assert (await send(grpc_cluster, message)).status.code == d.OK
    [got] = await pull_all(grpc_cluster, "DelayTopic", 1)
    assert got.body == b"later"
    assert got.properties[mc.PROPERTY_TIMER_DELIVER_MS] == str(deliver_ms)
    # Not readable before its time (a second of slack for the timer's tick).
    assert time.monotonic() - sent_at >= 1.0


async def test_send_refusals_are_statuses(grpc_cluster: GrpcCluster) -> None:
    await create_topic(grpc_cluster.broker, "RefuseTopic")
    empty = await grpc_cluster.stub.SendMessage(pb.SendMessageRequest())
    assert (empty.status.code, empty.status.message) == (d.MESSAGE_CORRUPTED, "no message to send")
    mixed = await send(grpc_cluster, grpc_message("RefuseTopic", b"x"), grpc_message("Other", b"y"))
    assert (mixed.status.code, mixed.status.message) == (
        d.MESSAGE_CORRUPTED,
        "topic in message is not same",
    )
    no_id = await send(grpc_cluster, grpc_message("RefuseTopic", b"x", message_id=""))
    assert (no_id.status.code, no_id.status.message) == (
        d.ILLEGAL_MESSAGE_ID,
        "message id is empty",
    )
    reserved = await send(
        grpc_cluster, grpc_message("RefuseTopic", b"x", user_properties={"UNIQ_KEY": "forged"})
    )
    assert (reserved.status.code, reserved.status.message) == (
        d.ILLEGAL_MESSAGE_PROPERTY_KEY,
        "property is used by system: UNIQ_KEY",
    )
    missing = await send(grpc_cluster, grpc_message("NoSuchTopic", b"x"))
    assert missing.status.code == d.TOPIC_NOT_FOUND
    await create_topic(grpc_cluster.broker, "ReadOnlyTopic", perm=4)
    read_only = await send(grpc_cluster, grpc_message("ReadOnlyTopic", b"x"))
    assert (read_only.status.code, read_only.status.message) == (d.FORBIDDEN, "no writable queue")
    # The broker is still serving.
    assert (await send(grpc_cluster, grpc_message("RefuseTopic", b"ok"))).status.code == d.OK
