"""What a replicated pair acknowledged, and the reads that check it against one broker.

Producers send keyed messages and keep every send answered SEND_OK (an ``Ack``): under
SYNC_MASTER only those are promised to be on the slave. A send answered FLUSH_SLAVE_TIMEOUT
or SLAVE_NOT_AVAILABLE is stored on the master but not promised replicated yet (kept apart,
``unreplicated``); one that failed is not promised at all. Every outcome but SEND_OK is
counted.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

from orbitmq.client import MQBrokerError, MQClientAPI, Producer, PullStatus, SendStatus
from orbitmq.client.message_selector import selector_of
from orbitmq.client.queue_reader import range_pull_header
from orbitmq.common import SUB_ALL, Message, MessageExt, MessageQueue
from orbitmq.common.errors import OrbitError
from orbitmq.filter import SubscriptionData

READ_GROUP = "ha-fault-reader"
_PULL_BATCH = 32
_SEND_TIMEOUT_S = 3.0
#: Answers of a SYNC_MASTER that stored the message but has no slave's word for it.
_STORED = (SendStatus.FLUSH_SLAVE_TIMEOUT, SendStatus.SLAVE_NOT_AVAILABLE)


def body_for(key: str) -> bytes:
    """A body that names its key, long enough to span frames now and then."""
    return (f"{key}|" * 40).encode()


@dataclass(frozen=True, slots=True)
class Ack:
    """One send answered SEND_OK: where the master said it stored the message."""

    key: str
    msg_id: str
    queue_id: int
    queue_offset: int
    body: bytes


@dataclass(slots=True)
class Ledger:
    """Every Ack so far, the sends stored but not yet replicated, and what the other sends
    were answered (status name or error type, counted). For one event loop."""

    acks: list[Ack] = field(default_factory=list)
    unreplicated: list[Ack] = field(default_factory=list)
    others: Counter[str] = field(default_factory=Counter)
    first_ack: asyncio.Event = field(default_factory=asyncio.Event)

    def describe(self) -> str:
        return f"{len(self.acks)} acknowledged, others: {dict(self.others)}"


async def send_keyed(producer: Producer, topic: str, key: str, ledger: Ledger) -> SendStatus | None:
    """Send one message with ``key`` and record its answer; None when the send failed."""
    msg = Message(topic, body_for(key))
    msg.keys = key
    try:
        result = await producer.send(msg, timeout_s=_SEND_TIMEOUT_S)
    except (OrbitError, OSError, TimeoutError) as exc:
        ledger.others[type(exc).__name__] += 1
        return None
    mq = result.message_queue
    ack = Ack(key, result.msg_id, mq.queue_id, result.queue_offset, msg.body)
    if result.send_status is SendStatus.SEND_OK:
        ledger.acks.append(ack)
        ledger.first_ack.set()
    else:
        ledger.others[result.send_status.name] += 1
        if result.send_status in _STORED:
            ledger.unreplicated.append(ack)
    return result.send_status


async def send_until(
    producer: Producer, topic: str, prefix: str, ledger: Ledger, stop: asyncio.Event
) -> None:
    """Send ``prefix-0``, ``prefix-1``, ... one at a time until ``stop``; after a failed
    send the next one is tried after a pause (the master may be gone)."""
    seq = 0
    while not stop.is_set():
        if await send_keyed(producer, topic, f"{prefix}-{seq}", ledger) is None:
            await asyncio.sleep(0.05)
        seq += 1


async def read_queue(
    api: MQClientAPI, addr: str, mq: MessageQueue, end_offset: int, timeout_s: float
) -> dict[int, MessageExt]:
    """Messages ``[0, end_offset)`` of ``mq`` pulled from the broker at ``addr`` (master or
    slave), by queue offset. Waits (bounded) for offsets the broker has not dispatched yet:
    a slave builds its consume queues a moment after its commit log has the bytes. What it
    holds by then is returned; the caller sees which offsets are missing."""
    sub: SubscriptionData = selector_of(SUB_ALL).subscription(mq.topic, int(time.time() * 1000))
    found: dict[int, MessageExt] = {}
    offset = 0
    deadline = time.monotonic() + timeout_s
    while offset < end_offset:
        header = range_pull_header(READ_GROUP, mq, sub, offset, _PULL_BATCH)
        result = await api.pull_message(addr, header, sub, 5.0, annotate=False)
        if result.pull_status is PullStatus.FOUND:
            found.update((m.queue_offset, m) for m in result.messages)
            offset = result.next_begin_offset
            continue
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    return found


async def wait_for_topic(api: MQClientAPI, addr: str, mq: MessageQueue, timeout_s: float) -> None:
    """Until the broker at ``addr`` serves pulls of ``mq``'s topic: a slave answers
    TOPIC_NOT_EXIST until its metadata sync (3 s after its start) copied the topic."""
    sub = selector_of(SUB_ALL).subscription(mq.topic, int(time.time() * 1000))
    header = range_pull_header(READ_GROUP, mq, sub, 0, 1)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            await api.pull_message(addr, header, sub, 5.0, annotate=False)
            return
        except MQBrokerError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def missing_on(
    api: MQClientAPI, addr: str, topic: str, broker_name: str, acks: list[Ack], timeout_s: float
) -> list[str]:
    """Every Ack not found on the broker at ``addr`` as acknowledged (same queue offset,
    unique id, key and body), described; empty when all are there. Waits ``timeout_s`` at
    most in all for the broker to dispatch what it lacks."""
    ends: dict[int, int] = {}
    for ack in acks:
        ends[ack.queue_id] = max(ends.get(ack.queue_id, 0), ack.queue_offset + 1)
    problems: list[str] = []
    deadline = time.monotonic() + timeout_s  # for all queues together
    for queue_id, end in sorted(ends.items()):
        mq = MessageQueue(topic, broker_name, queue_id)
        stored = await read_queue(api, addr, mq, end, max(0.0, deadline - time.monotonic()))
        for ack in (a for a in acks if a.queue_id == queue_id):
            problems += _compare(ack, stored.get(ack.queue_offset))
    return problems


def _compare(ack: Ack, stored: MessageExt | None) -> list[str]:
    where = f"{ack.key} (queue {ack.queue_id} offset {ack.queue_offset})"
    if stored is None:
        return [f"{where}: not found"]
    if stored.unique_key != ack.msg_id or stored.keys != [ack.key] or stored.body != ack.body:
        return [
            f"{where}: found {stored.unique_key} keys {stored.keys} instead of {ack.msg_id}"
            + ("" if stored.body == ack.body else ", another body")
        ]
    return []


async def queue_max_offsets(
    api: MQClientAPI, addr: str, topic: str, broker_name: str, queue_ids: range
) -> list[int]:
    """GET_MAX_OFFSET of each queue on the broker at ``addr``."""
    return [
        await api.get_max_offset(addr, MessageQueue(topic, broker_name, q), 3.0) for q in queue_ids
    ]
