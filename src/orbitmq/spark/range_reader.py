"""Reading one planned range on an executor: the pulls, the data-loss rule, and the Arrow
batches Spark receives."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from orbitmq.client import OffsetOutOfRangeError
from orbitmq.spark import client_pool
from orbitmq.spark.offset_ranges import QueueRange, check_start
from orbitmq.spark.schema import to_record_batch


def read_range(
    namesrv_addr: str,
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
    reader = client_pool.reader_for(namesrv_addr)
    mq = part.message_queue
    start = part.start
    while start < part.end:
        try:
            for batch in reader.read(
                mq, start, part.end, subscription=sub_expression, batch_size=pull_batch_size
            ):
                start = batch[-1].queue_offset + 1
                yield to_record_batch(part.topic, part.broker_name, part.queue_id, batch)
            return
        except OffsetOutOfRangeError as exc:
            resumed = check_start(
                mq, exc.requested_offset, exc.min_offset, exc.max_offset, fail=fail_on_data_loss
            )
            if resumed <= start:
                raise  # not a gap we may skip: the range reaches past what is written
            start = resumed
