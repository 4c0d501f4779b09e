"""RECALL_MESSAGE (RocketMQ 5.3) over remoting, through OrbitMQ's Producer and an in-process
cluster of two brokers: a delay message's send answer carries its recall handle; recalled,
the message is never delivered while one due after it is; and the refusals, as RocketMQ's
broker gives them (recalls off, a bad handle, another topic's or broker's handle, a message
already delivered)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.client import MQBrokerError, MQClientError, Producer
from orbitmq.common import Message, MessageExt
from orbitmq.common.recall_message_handle import RecallMessageHandle
from orbitmq.protocol import ResponseCode
from orbitmq.protocol.body.topic import TopicConfig
from orbitmq.protocol.header import RecallMessageRequestHeader
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async
from tests.integration.test_timer_messages import visible

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    settings = {"recall_message_enable": True}
    async with InProcessCluster(tmp_path / "cluster", brokers=2, broker_settings=settings) as c:
        yield c


def _delay(topic: str, body: bytes, deliver_ms: int) -> Message:
    message = Message(topic, body)
    message.deliver_time_ms = deliver_ms
    return message


async def test_a_recalled_delay_message_is_never_delivered(cluster: InProcessCluster) -> None:
    due = int(time.time() * 1000) + 1500
    async with Producer("recall-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        recalled = await producer.send(_delay("RecallTopic", b"recalled", due))
        kept = await producer.send(_delay("RecallTopic", b"kept", due + 300))
        plain = await producer.send(Message("RecallTopic", b"plain"))
        assert recalled.recall_handle and kept.recall_handle
        assert plain.recall_handle is None  # only a timer parked for later has one
        handle = RecallMessageHandle.decode(recalled.recall_handle)
        assert (handle.topic, handle.message_id) == ("RecallTopic", recalled.msg_id)
        assert handle.broker_name == recalled.message_queue.broker_name
        assert await producer.recall_message("RecallTopic", recalled.recall_handle) == (
            recalled.msg_id
        )

    def bodies(found: list[MessageExt]) -> set[bytes]:
        return {m.body for m in found}

    async def kept_delivered() -> set[bytes] | None:
        got = bodies(await visible(cluster, "RecallTopic"))
        return got if b"kept" in got else None

    # The kept one falls due after the recalled one: by then that one would be out.
    assert await eventually_async(kept_delivered, 20) == {b"plain", b"kept"}
    timers = [b.timer_message_store for b in cluster.brokers]
    assert sum(t.recalled for t in timers if t is not None) == 1


async def _recall(
    cluster: InProcessCluster, broker: int, topic: str, handle: str
) -> tuple[int, str | None]:
    """RECALL_MESSAGE sent straight to a broker: its answer's code and remark."""
    target = cluster.brokers[broker]
    async with Producer("recall-raw", namesrv_addr=cluster.namesrv_addr) as producer:
        header = RecallMessageRequestHeader(topic=topic, recall_handle=handle)
        try:
            await producer.instance.api.recall_message(target.address, header, 5)
        except MQBrokerError as exc:
            return exc.code, exc.remark
    return ResponseCode.SUCCESS, None


async def test_recall_refusals(cluster: InProcessCluster) -> None:
    due = int(time.time() * 1000) + 30_000
    async with Producer("recall-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        sent = await producer.send(_delay("RefuseTopic", b"later", due))
        assert sent.recall_handle is not None
        with pytest.raises(MQClientError, match="recall handle is invalid"):
            await producer.recall_message("RefuseTopic", "not a handle")
    handle = RecallMessageHandle.decode(sent.recall_handle)
    home = next(
        i
        for i, b in enumerate(cluster.brokers)
        if b.broker_config.broker_name == handle.broker_name
    )
    other = 1 - home
    illegal = ResponseCode.ILLEGAL_OPERATION
    assert await _recall(cluster, home, "RefuseTopic", "bm90IGEgaGFuZGxl") == (
        illegal,
        "recall handle is invalid",
    )
    # The request names another topic than the handle.
    for broker in cluster.brokers:
        broker.topic_config_manager.update_topic_config(TopicConfig(topic_name="TopicOther"))
        broker.topic_config_manager.update_topic_config(TopicConfig(topic_name="RefuseTopic"))
    assert await _recall(cluster, home, "TopicOther", sent.recall_handle) == (
        illegal,
        "recall failed, topic not match",
    )
    assert await _recall(cluster, other, "RefuseTopic", sent.recall_handle) == (
        illegal,
        "recall failed, broker service not available",
    )
    # Its time has passed: delivered already (or on its way).
    past = RecallMessageHandle("RefuseTopic", handle.broker_name, str(due - 60_000), sent.msg_id)
    assert await _recall(cluster, home, "RefuseTopic", past.encode()) == (
        illegal,
        "recall failed, timestamp invalid",
    )
    cluster.brokers[home].broker_config.recall_message_enable = False
    assert await _recall(cluster, home, "RefuseTopic", sent.recall_handle) == (
        ResponseCode.NO_PERMISSION,
        "recall failed, operation is forbidden",
    )
