"""``spark.read.format("orbitmq")``: plans the ranges on the driver from the queues' bounds
and the options, then reads each range in a task."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, InputPartition

from orbitmq.common import MessageQueue
from orbitmq.spark import client_pool
from orbitmq.spark.offset_ranges import check_start, plan_ranges, resolve
from orbitmq.spark.options import EARLIEST, LATEST, OptionError, SourceOptions
from orbitmq.spark.range_reader import read_partition


def topic_bounds(options: SourceOptions) -> dict[MessageQueue, tuple[int, int]]:
    """(min, max) offset of every readable queue of the options' topics, from the brokers."""
    reader = client_pool.reader_for(options.endpoint)
    bounds: dict[MessageQueue, tuple[int, int]] = {}
    for topic in options.topics:
        bounds.update(reader.queue_offsets(topic))
    return bounds


class OrbitMQBatchReader(DataSourceReader):
    """Owns the parsed options of one batch read; ``partitions`` runs on the driver, ``read``
    in the tasks (the reader is pickled to them)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        bounds = topic_bounds(options)
        search = client_pool.reader_for(options.endpoint)
        starts = resolve(options.starting, bounds, search, missing=EARLIEST)
        ends = resolve(options.ending, bounds, search, missing=LATEST)
        for mq, (low, high) in bounds.items():
            ends[mq] = min(ends[mq], high)
            if starts[mq] > ends[mq] and options.ending.kind != "latest":
                raise OptionError(
                    f"{mq.topic} queue {mq.broker_name}:{mq.queue_id}: startingOffsets"
                    f" {starts[mq]} is after endingOffsets {ends[mq]}"
                )
            starts[mq] = check_start(mq, starts[mq], low, high, fail=options.fail_on_data_loss)
        ranges: list[InputPartition] = list(
            plan_ranges(
                starts,
                ends,
                min_partitions=options.min_partitions,
                max_records_per_partition=options.max_records_per_partition,
            )
        )
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.options, partition)
