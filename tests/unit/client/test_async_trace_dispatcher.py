"""AsyncTraceDispatcher: records are batched into trace messages keyed by their message ids,
sent in the background; a full queue drops records instead of waiting, and a failing or
stuck trace send never reaches the code that appended."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.client.trace import (
    AsyncTraceDispatcher,
    TraceBean,
    TraceContext,
    TraceType,
    decode_trace_data,
)
from orbitmq.common import Message
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(30)


class FakeSender:
    """Records what a trace producer would send; can fail, or hold every send."""

    def __init__(self) -> None:
        self.sent: list[Message] = []
        self.fail = False
        self.hold = asyncio.Event()
        self.hold.set()
        self.started = self.stopped = False

    async def start(self) -> None:
        self.started = True

    async def shutdown(self) -> None:
        self.stopped = True

    async def send(self, msg: Message, *, timeout_s: float | None = None) -> object:
        await asyncio.sleep(0)  # a send always takes a turn of the loop, as a network one
        await self.hold.wait()
        if self.fail:
            raise ConnectionError("broker gone")
        self.sent.append(msg)
        return None


def pub(i: int) -> TraceContext:
    bean = TraceBean(topic="T", msg_id=f"ID{i}", keys=f"k{i}")
    return TraceContext(TraceType.PUB, timestamp_ms=i, group_name="pg", trace_beans=[bean])


async def test_a_full_batch_sends_at_once_in_messages_of_batch_size() -> None:
    sender = FakeSender()
    # A threshold no test waits for: full batches go at once, the rest waits for it (or,
    # here, for the shutdown).
    dispatcher = AsyncTraceDispatcher(sender, "TRACE", wait_time_threshold_s=60)
    await dispatcher.start()
    assert sender.started
    for i in range(250):
        assert dispatcher.append(pub(i))
    await eventually_async(lambda: len(sender.sent) == 2, what="two full batches sent")
    assert dispatcher.queued == 50
    await dispatcher.shutdown()
    assert sender.stopped
    assert [len(decode_trace_data(m.body.decode())) for m in sender.sent] == [100, 100, 50]
    first = sender.sent[0]
    assert first.topic == "TRACE"
    assert {"ID0", "k0", "ID99", "k99"} <= set(first.keys)
    assert "ID100" not in first.keys
    assert dispatcher.sent_records == 250


async def test_a_partial_batch_is_sent_once_its_oldest_record_waited_the_threshold() -> None:
    sender = FakeSender()
    dispatcher = AsyncTraceDispatcher(sender, wait_time_threshold_s=0.2)
    await dispatcher.start()
    began = asyncio.get_running_loop().time()
    dispatcher.append(pub(1))
    dispatcher.append(pub(2))
    await eventually_async(lambda: sender.sent, what="the partial batch sent")
    assert asyncio.get_running_loop().time() - began >= 0.2
    assert sender.sent[0].topic == "RMQ_SYS_TRACE_TOPIC"
    assert len(decode_trace_data(sender.sent[0].body.decode())) == 2
    await dispatcher.shutdown()


async def test_a_steady_trickle_still_fills_batches() -> None:
    """Records arriving one by one while a trace send is under way wait for a full batch
    (or the threshold), not one trace message each."""
    sender = FakeSender()
    dispatcher = AsyncTraceDispatcher(sender, batch_size=10, wait_time_threshold_s=60)
    await dispatcher.start()
    for i in range(50):
        dispatcher.append(pub(i))
        await asyncio.sleep(0)
    await eventually_async(lambda: len(sender.sent) == 5, what="five full batches")
    await dispatcher.shutdown()
    assert [len(decode_trace_data(m.body.decode())) for m in sender.sent] == [10] * 5


async def test_a_message_holds_at_most_max_msg_size_of_text() -> None:
    sender = FakeSender()
    dispatcher = AsyncTraceDispatcher(sender, max_msg_size=12_000, wait_time_threshold_s=60)
    await dispatcher.start()
    for i in range(40):
        big = pub(i)
        big.trace_beans[0].topic = "T" * 500
        dispatcher.append(big)
    await dispatcher.shutdown()
    # Each message closes once it reaches max_msg_size - 10000 bytes of text.
    assert all(len(m.body) < 2_000 + 600 for m in sender.sent)
    assert sum(len(decode_trace_data(m.body.decode())) for m in sender.sent) == 40


async def test_a_full_queue_drops_records_without_waiting() -> None:
    sender = FakeSender()
    sender.hold.clear()  # the broker never answers
    dispatcher = AsyncTraceDispatcher(sender, queue_capacity=10, batch_size=5)
    await dispatcher.start()
    accepted = [dispatcher.append(pub(i)) for i in range(5)]
    # The worker takes the first batch and waits on its send; the queue fills behind it.
    await eventually_async(lambda: dispatcher.queued == 0, what="first batch taken")
    accepted += [dispatcher.append(pub(i)) for i in range(5, 20)]
    assert accepted == [True] * 15 + [False] * 5
    assert dispatcher.discard_count == 5
    sender.hold.set()
    await dispatcher.shutdown()
    assert dispatcher.sent_records == 15


async def test_failed_trace_sends_are_counted_not_raised() -> None:
    sender = FakeSender()
    sender.fail = True
    dispatcher = AsyncTraceDispatcher(sender, wait_time_threshold_s=60)
    await dispatcher.start()
    for i in range(3):
        dispatcher.append(pub(i))
    await dispatcher.shutdown()  # the final flush fails too, quietly
    assert (dispatcher.failed_records, dispatcher.sent_records) == (3, 0)
    assert not dispatcher.append(pub(9))  # stopped: dropped


async def test_shutdown_sends_what_is_queued() -> None:
    sender = FakeSender()
    dispatcher = AsyncTraceDispatcher(sender, wait_time_threshold_s=60)
    await dispatcher.start()
    dispatcher.append(pub(1))
    await dispatcher.shutdown()
    assert len(sender.sent) == 1
