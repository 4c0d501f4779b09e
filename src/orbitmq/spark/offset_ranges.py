"""Planning reads: turn an ``OffsetSpec`` into concrete offsets per queue, check them against
what the queues still hold (``failOnDataLoss``), and cut ``[start, end)`` ranges into Spark
input partitions.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from pyspark.sql.datasource import InputPartition

from orbitmq.common import MessageQueue
from orbitmq.common.errors import OrbitError
from orbitmq.spark.options import EARLIEST, LATEST, OffsetSpec

log = logging.getLogger(__name__)

#: (min offset, max offset) of a queue; max is one past its last message.
Bounds = Mapping[MessageQueue, tuple[int, int]]


class DataLossError(OrbitError):
    """Offsets a read needs are gone (retention deleted them) or no longer exist (the queue
    was recreated), and ``failOnDataLoss`` is true."""


class OffsetSearch(Protocol):
    """What planning asks the broker besides the bounds: a queue's offset at a time."""

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int: ...


@dataclass(frozen=True)
class QueueRange(InputPartition):
    """Offsets ``[start, end)`` of one queue: what one Spark task reads."""

    topic: str
    broker_name: str
    queue_id: int
    start: int
    end: int

    @property
    def message_queue(self) -> MessageQueue:
        return MessageQueue(self.topic, self.broker_name, self.queue_id)

    @property
    def size(self) -> int:
        return self.end - self.start


def queue_key(mq: MessageQueue) -> str:
    """How a queue is named in offset JSON and in the stream's checkpointed offsets."""
    return f"{mq.broker_name}:{mq.queue_id}"


def parse_queue_key(topic: str, key: str) -> MessageQueue:
    broker_name, _, queue_id = key.rpartition(":")
    return MessageQueue(topic, broker_name, int(queue_id))


def to_json(offsets: Mapping[MessageQueue, int]) -> dict[str, dict[str, int]]:
    """Offsets per queue as offset JSON and the stream's checkpointed form: topics, then
    queues by ``broker:queueId``, in sorted order."""
    result: dict[str, dict[str, int]] = {}
    for mq in sorted(offsets):
        result.setdefault(mq.topic, {})[queue_key(mq)] = offsets[mq]
    return result


def from_json(offsets: Mapping[str, Mapping[str, int]]) -> dict[MessageQueue, int]:
    return {
        parse_queue_key(topic, key): int(offset)
        for topic, queues in offsets.items()
        for key, offset in queues.items()
    }


def resolve(
    spec: OffsetSpec, bounds: Bounds, search: OffsetSearch, *, missing: int
) -> dict[MessageQueue, int]:
    """The offset ``spec`` names for each queue of ``bounds``. A queue the spec leaves out
    gets ``missing`` (EARLIEST or LATEST)."""
    resolved: dict[MessageQueue, int] = {}
    for mq, (low, high) in bounds.items():
        if spec.kind == "earliest":
            value = EARLIEST
        elif spec.kind == "latest":
            value = LATEST
        elif spec.kind == "timestamp":
            value = search.search_offset(mq, spec.timestamp_ms)
        else:
            named = spec.lookup(mq)
            if named is None:
                value = missing
            elif spec.kind == "timestamps":
                value = search.search_offset(mq, named)
            else:
                value = named
        resolved[mq] = low if value == EARLIEST else high if value == LATEST else value
    return resolved


def check_start(mq: MessageQueue, start: int, low: int, high: int, *, fail: bool) -> int:
    """Where reading ``mq`` may begin when asked to begin at ``start``: ``start`` itself
    when the queue still holds it, else (``fail`` false) the queue's min offset, with a
    warning. With ``fail`` true a missing offset raises DataLossError."""
    if low <= start <= high:
        return start
    if start < low:
        problem = (
            f"offsets [{start}, {low}) of {mq.topic} queue {queue_key(mq)} are gone: the queue"
            f" now holds [{low}, {high}) (retention deleted the older messages)"
        )
    else:
        problem = (
            f"offset {start} of {mq.topic} queue {queue_key(mq)} is past the queue's max offset"
            f" {high}: the queue was recreated or its data deleted"
        )
    if fail:
        raise DataLossError(
            f"{problem}. Set failOnDataLoss=false to skip to the oldest message still stored."
        )
    log.warning("%s; skipping to offset %d (failOnDataLoss=false)", problem, low)
    return low


def plan_ranges(
    starts: Mapping[MessageQueue, int],
    ends: Mapping[MessageQueue, int],
    *,
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[QueueRange]:
    """One range per queue with something to read, cut so that none holds more than
    ``max_records_per_partition`` offsets and there are at least ``min_partitions`` ranges
    (Kafka's source splits the same way: the biggest queues are cut first, in proportion)."""
    whole = [
        QueueRange(mq.topic, mq.broker_name, mq.queue_id, starts.get(mq, 0), end)
        for mq, end in sorted(ends.items())
        if end > starts.get(mq, 0)
    ]
    total = sum(r.size for r in whole)
    ranges: list[QueueRange] = []
    for r in whole:
        pieces = 1
        if max_records_per_partition is not None:
            pieces = max(pieces, math.ceil(r.size / max_records_per_partition))
        if min_partitions is not None and len(whole) < min_partitions:
            pieces = max(pieces, math.ceil(min_partitions * r.size / total))
        ranges.extend(_split(r, pieces))
    return ranges


def _split(r: QueueRange, pieces: int) -> Iterable[QueueRange]:
    pieces = min(pieces, r.size)
    step, extra = divmod(r.size, pieces)
    start = r.start
    for i in range(pieces):
        end = start + step + (1 if i < extra else 0)
        yield QueueRange(r.topic, r.broker_name, r.queue_id, start, end)
        start = end
