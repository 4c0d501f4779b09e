"""Reading one planned range on an executor: the pulls, the data-loss rule, and the Arrow
batches Spark receives (decoded column by column from the pulled records)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Final

from orbitmq.client import OffsetOutOfRangeError
from orbitmq.filter import build_subscription_data
from orbitmq.spark import client_pool
from orbitmq.spark.arrow_records import records_to_batch
from orbitmq.spark.offset_ranges import QueueRange, check_start
from orbitmq.spark.options import Endpoint, SourceOptions

#: Pull answers are decoded together until they hold this many bytes: numpy and Arrow cost
#: about as much per call as per kilobyte, and a broker with RocketMQ's default transfer
#: limits answers with at most 32 messages or 256 KiB.
DECODE_BYTES: Final = 2 * 1024 * 1024


def _coalesced(answers: Iterator[memoryview], limit: int) -> Iterator[memoryview]:
    """The pull answers' records in runs of at least ``limit`` bytes (the last may be
    shorter); an answer that big alone is passed on as it is, uncopied. A run is a view of
    a buffer reused for the next one: it must be used before the next is asked for. When a
    pull fails, the answers read before it come out first."""
    buffer = bytearray(2 * limit)
    used = 0
    try:
        for records in answers:
            if not used and len(records) >= limit:
                yield records
                continue
            end = used + len(records)
            if end > len(buffer):
                grown = bytearray(2 * end)
                grown[:used] = buffer[:used]
                buffer = grown
            buffer[used:end] = records
            used = end
            if used >= limit:
                yield memoryview(buffer)[:used]
                used = 0
    except OffsetOutOfRangeError:
        if used:
            yield memoryview(buffer)[:used]
        raise
    if used:
        yield memoryview(buffer)[:used]


def _tags_set(topic: str, sub_expression: str) -> frozenset[str] | None:
    """The tag strings a row must carry, None when any will do."""
    sub = build_subscription_data(topic, sub_expression, int(time.time() * 1000))
    return None if sub.is_sub_all or not sub.tags_set else frozenset(sub.tags_set)


def read_range(
    endpoint: Endpoint,
    part: QueueRange,
    *,
    sub_expression: str,
    pull_batch_size: int,
    fail_on_data_loss: bool,
) -> Iterator[Any]:
    """Arrow record batches of the messages of ``part`` that match ``sub_expression``.

    Retention may delete offsets between planning and reading: with ``fail_on_data_loss``
    that raises DataLossError, else the read goes on from the oldest offset still stored.
    """
    reader = client_pool.reader_for(endpoint)
    mq = part.message_queue
    tags = _tags_set(part.topic, sub_expression)
    start = part.start
    while start < part.end:
        try:
            answers = reader.read_raw(
                mq, start, part.end, subscription=sub_expression, batch_size=pull_batch_size
            )
            for records in _coalesced(answers, DECODE_BYTES):
                batch = records_to_batch(
                    records,
                    part.topic,
                    part.broker_name,
                    part.queue_id,
                    end_offset=part.end,
                    tags_set=tags,
                )
                if batch.num_rows:
                    start = batch.column("queueOffset")[-1].as_py() + 1
                    yield batch
            return
        except OffsetOutOfRangeError as exc:
            resumed = check_start(
                mq, exc.requested_offset, exc.min_offset, exc.max_offset, fail=fail_on_data_loss
            )
            if resumed <= start:
                raise  # not a gap we may skip: the range reaches past what is written
            start = resumed


def read_partition(options: SourceOptions, partition: object) -> Iterator[Any]:
    """A batch or streaming task's read of its planned range, with the query's options."""
    assert isinstance(partition, QueueRange)
    return read_range(
        options.endpoint,
        partition,
        sub_expression=options.sub_expression,
        pull_batch_size=options.pull_batch_size,
        fail_on_data_loss=options.fail_on_data_loss,
    )
