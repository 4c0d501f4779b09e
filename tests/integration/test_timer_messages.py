"""Timer messages through clients and an in-process cluster: a transactional timer starts its
wait when committed (as RocketMQ parks only plain and committed messages); the blocking
facade's producer sends timers as the async one does."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from orbitmq import sync
from orbitmq.client import (
    LocalTransactionState,
    SendStatus,
    TransactionProducer,
    queue_offsets,
    read_queue_range,
)
from orbitmq.common import Message, MessageExt
from orbitmq.common import message_const as mc
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path / "cluster") as running:
        yield running


async def visible(cluster: InProcessCluster, topic: str) -> list[MessageExt]:
    found: list[MessageExt] = []
    try:
        bounds = await queue_offsets(cluster.namesrv_addr, topic)
    except Exception:  # no route yet: nothing stored in the topic
        return found
    for mq, (low, high) in bounds.items():
        async for batch in read_queue_range(
            cluster.namesrv_addr, topic, mq.broker_name, mq.queue_id, low, high
        ):
            found += batch
    return found


class CommitAfter:
    """Commits once ``release`` is set: the local transaction takes a while."""

    def __init__(self) -> None:
        self.committed_at_ms = 0

    async def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        await asyncio.sleep(0.5)
        self.committed_at_ms = time.time_ns() // 1_000_000
        return LocalTransactionState.COMMIT_MESSAGE

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE


async def test_a_transactional_timer_waits_from_its_commit(cluster: InProcessCluster) -> None:
    listener = CommitAfter()
    async with TransactionProducer(
        "timer-tx", transaction_listener=listener, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        msg = Message("TimerTxTopic", b"paid, remind in 0.6 s")
        msg.delay_ms = 600
        sent = await producer.send_message_in_transaction(msg)
        assert sent.send_result.send_status is SendStatus.SEND_OK
    assert await visible(cluster, "TimerTxTopic") == []
    got = await eventually_async(lambda: visible(cluster, "TimerTxTopic"), 10)
    due = int(got[0].properties[mc.PROPERTY_TIMER_OUT_MS])
    assert due >= listener.committed_at_ms + 600 - 50  # from the commit, not the half
    assert got[0].store_timestamp >= due


async def test_the_blocking_producer_sends_timers(cluster: InProcessCluster) -> None:
    msg = Message("TimerSyncTopic", b"at a time")
    msg.deliver_time_ms = time.time_ns() // 1_000_000 + 700

    def send() -> SendStatus:  # in a thread of its own, as a blocking program runs
        with sync.Producer("timer-sync", namesrv_addr=cluster.namesrv_addr) as producer:
            return producer.send(msg).send_status

    assert await asyncio.to_thread(send) is SendStatus.SEND_OK
    got = await eventually_async(lambda: visible(cluster, "TimerSyncTopic"), 10)
    assert got[0].store_timestamp >= msg.deliver_time_ms
