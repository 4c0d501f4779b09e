"""RecallMessage (RocketMQ 5.3) over a real gRPC channel into an in-process broker: a delay
message's SendMessage answer carries its recall handle; recalled, it is never delivered
while one due after it is; refusals come back as the proxy's statuses (a bad handle,
another broker's, a message delivered already, a topic not of the DELAY type, recalls
off)."""

from __future__ import annotations

import time

from google.protobuf.timestamp_pb2 import Timestamp

from orbitmq.common.recall_message_handle import RecallMessageHandle
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from tests.integration.grpc.conftest import CLIENT_METADATA, GrpcCluster, create_topic
from tests.integration.grpc.test_grpc_send_route import grpc_message, pull_all, send


def _at(ms: int) -> Timestamp:
    return Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


async def _send_delay(g: GrpcCluster, topic: str, body: bytes, due_ms: int) -> pb.SendResultEntry:
    message = grpc_message(topic, body, message_type=d.DELAY, delivery_timestamp=_at(due_ms))
    answer = await send(g, message)
    assert answer.status.code == d.OK, answer.status
    [entry] = answer.entries
    return entry


async def recall(g: GrpcCluster, topic: str, handle: str) -> pb.RecallMessageResponse:
    request = pb.RecallMessageRequest(topic=d.Resource(name=topic), recall_handle=handle)
    return await g.stub.RecallMessage(request, metadata=CLIENT_METADATA, timeout=10)


async def test_a_recalled_message_is_never_delivered(grpc_cluster: GrpcCluster) -> None:
    g = grpc_cluster
    g.broker.broker_config.recall_message_enable = True
    await create_topic(g.broker, "GrpcRecallTopic", "DELAY")
    due = int(time.time() * 1000) + 1500
    recalled = await _send_delay(g, "GrpcRecallTopic", b"recalled", due)
    kept = await _send_delay(g, "GrpcRecallTopic", b"kept", due + 300)
    assert recalled.recall_handle and kept.recall_handle
    handle = RecallMessageHandle.decode(recalled.recall_handle)
    assert handle.message_id == recalled.message_id
    assert handle.broker_name == g.broker.broker_config.broker_name
    answer = await recall(g, "GrpcRecallTopic", recalled.recall_handle)
    assert (answer.status.code, answer.message_id) == (d.OK, recalled.message_id)
    # The kept one falls due after the recalled one: by then that one would be out.
    [got] = await pull_all(g, "GrpcRecallTopic", 1)
    assert got.body == b"kept"
    assert g.broker.timer_message_store is not None
    assert g.broker.timer_message_store.recalled == 1
    # Delivered already: too late to recall.
    late = await recall(g, "GrpcRecallTopic", kept.recall_handle)
    assert (late.status.code, late.status.message) == (
        d.INTERNAL_SERVER_ERROR,
        "recall failed, timestamp invalid",
    )


async def test_recall_refusals(grpc_cluster: GrpcCluster) -> None:
    g = grpc_cluster
    await create_topic(g.broker, "GrpcRefuseTopic", "DELAY")
    await create_topic(g.broker, "GrpcNormalTopic", "NORMAL")
    due = int(time.time() * 1000) + 60_000
    sent = await _send_delay(g, "GrpcRefuseTopic", b"later", due)
    plain = await send(g, grpc_message("GrpcNormalTopic", b"now"))
    assert plain.entries[0].recall_handle == ""  # only a delay message has one

    async def refused(topic: str, handle: str) -> tuple[int, str]:
        answer = await recall(g, topic, handle)
        return answer.status.code, answer.status.message

    # recallMessageEnable is off by default, as in RocketMQ.
    assert await refused("GrpcRefuseTopic", sent.recall_handle) == (
        d.INTERNAL_SERVER_ERROR,
        "recall failed, operation is forbidden",
    )
    g.broker.broker_config.recall_message_enable = True
    assert await refused("GrpcRefuseTopic", "%%%") == (
        d.INTERNAL_SERVER_ERROR,
        "recall handle is invalid",
    )
    other = RecallMessageHandle("GrpcRefuseTopic", "broker-z", str(due), sent.message_id)
    assert await refused("GrpcRefuseTopic", other.encode()) == (
        d.INTERNAL_SERVER_ERROR,
        "recall failed, broker service not available",
    )
    code, message = await refused("GrpcNormalTopic", sent.recall_handle)
    assert code == d.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE
    assert message == (
        "TopicMessageType validate failed, the expected type is NORMAL, but actual type is DELAY"
    )
    assert (await refused("NoSuchTopic", sent.recall_handle))[0] == d.TOPIC_NOT_FOUND
    assert (await refused("bad topic!", sent.recall_handle))[0] == d.ILLEGAL_TOPIC
    # Still recallable after all that.
    assert (await recall(g, "GrpcRefuseTopic", sent.recall_handle)).status.code == d.OK
