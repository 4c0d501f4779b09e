"""Reading a topic's stored messages queue by queue, without a consumer group: by offset
range or by store time range (each end found by the broker's search-by-timestamp). What
mqadmin printMsg and consumeMessage do, ``orbitmq query --begin/--end`` and the console's
message search by time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from orbitmq.client.errors import MQClientError
from orbitmq.client.queue_reader import QueueReader
from orbitmq.common import SUB_ALL, MessageExt, MessageQueue


@dataclass(frozen=True, slots=True)
class ScanRange:
    """Which queues and which part of each to read: a broker and a queue id narrow the
    queues; an offset or a time says where each starts and ends (the queue's first and end
    offsets when unset). Immutable."""

    broker_name: str | None = None
    queue_id: int | None = None
    start_offset: int | None = None
    begin_ms: int | None = None
    end_ms: int | None = None
    subscription: str = SUB_ALL


async def queues_of(reader: QueueReader, topic: str, scan: ScanRange) -> list[MessageQueue]:
    """The topic's readable queues that ``scan`` names; an error when it names none."""
    queues = [
        mq
        for mq in await reader.message_queues(topic)
        if scan.broker_name in (None, mq.broker_name) and scan.queue_id in (None, mq.queue_id)
    ]
    if not queues:
        where = f"broker {scan.broker_name or '*'}, queue {scan.queue_id}"
        raise MQClientError(f"topic {topic} has no readable queue at {where}")
    return queues


async def bounds(reader: QueueReader, mq: MessageQueue, scan: ScanRange) -> tuple[int, int]:
    """Where reading ``mq`` starts and ends (end exclusive)."""
    low = await reader.instance.min_offset(mq)
    high = await reader.instance.max_offset(mq)
    start = low
    if scan.start_offset is not None:
        start = max(low, scan.start_offset)
    elif scan.begin_ms is not None:
        start = await reader.search_offset(mq, scan.begin_ms)
    end = high if scan.end_ms is None else await reader.search_offset(mq, scan.end_ms)
    return start, max(start, min(end, high))


async def scan_messages(
    reader: QueueReader, topic: str, scan: ScanRange, limit: int | None = None
) -> AsyncIterator[MessageExt]:
    """The messages ``scan`` selects, queue by queue in (broker, queue id) order, oldest
    first in each, at most ``limit``."""
    count = 0
    for mq in await queues_of(reader, topic, scan):
        start, end = await bounds(reader, mq, scan)
        if start >= end:
            continue
        async for batch in reader.read(mq, start, end, subscription=scan.subscription):
            for message in batch:
                if limit is not None and count >= limit:
                    return
                count += 1
                yield message
