"""``spark.readStream.format("orbitmq")``: offsets are ``{"topic": {"broker:queueId":
offset}}`` maps that Spark checkpoints; each micro-batch reads ``[start, end)`` per queue.

Exactly once across restarts comes from Spark: it writes a batch's end offsets to its offset
log before running it and replays the same ``partitions(start, end)`` after a crash, and the
ranges depend only on those offsets. With ``consumerGroup`` the progress is recorded at the
broker, for admin tools only (nothing reads it back): Spark calls ``commit`` for a batch only
when it plans the next one, so the offsets a new ``latestOffset`` starts from (every batch
before is done by then) are recorded too; that covers a run's last batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from orbitmq.common import SYSTEM_CLOCK, Clock, MessageQueue
from orbitmq.spark import client_pool
from orbitmq.spark.batch_reader import topic_bounds
from orbitmq.spark.offset_ranges import check_start, from_json, plan_ranges, resolve, to_json
from orbitmq.spark.options import EARLIEST, SourceOptions
from orbitmq.spark.range_reader import read_partition

Offsets = dict[MessageQueue, int]


def rate_limit(start: Offsets, latest: Offsets, max_offsets: int) -> Offsets:
    """End offsets that read at most ``max_offsets`` offsets past ``start``, shared among the
    queues in proportion to their backlog (as Kafka's source does), always moving forward."""
    backlog = {mq: max(0, high - start.get(mq, 0)) for mq, high in latest.items()}
    total = sum(backlog.values())
    if total <= max_offsets:
        return dict(latest)
    share = {mq: size * max_offsets // total for mq, size in backlog.items()}
    left = max_offsets - sum(share.values())
    # Rounding down leaves up to one offset per queue: hand it to the biggest backlogs.
    for mq in sorted(backlog, key=lambda q: backlog[q] - share[q], reverse=True)[:left]:
        share[mq] += 1
    return {mq: start.get(mq, 0) + share[mq] for mq in latest}


class OrbitMQStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Owns the options of one streaming query and, on the driver, the trigger state: the
    Trigger.AvailableNow target and when the last batch was planned (maxTriggerDelay, by
    ``clock``'s monotonic reading). ``partitions``/``commit`` run on the driver, ``read`` in
    the tasks."""

    def __init__(self, options: SourceOptions, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self.options = options
        self._clock = clock
        self._target: Offsets | None = None
        self._last_batch_ms = clock.monotonic() * 1000
        self._recorded: Offsets = {}

    def initialOffset(self) -> dict[str, Any]:
        options = self.options
        bounds = topic_bounds(options)
        search = client_pool.reader_for(options.endpoint)
        starts = resolve(options.starting, bounds, search, missing=EARLIEST)
        for mq, (low, high) in bounds.items():
            starts[mq] = check_start(mq, starts[mq], low, high, fail=options.fail_on_data_loss)
        return to_json(starts)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._latest()

    def _latest(self) -> Offsets:
        return {mq: high for mq, (_low, high) in topic_bounds(self.options).items()}

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        current = from_json(start)
        self._record_progress(current)
        latest = self._latest()
        if self._target is not None:
            # AvailableNow: nothing written after the query started, no queue added since.
            latest = {
                mq: min(high, self._target[mq]) for mq, high in latest.items() if mq in self._target
            }
        for mq, offset in current.items():
            latest[mq] = max(latest.get(mq, offset), offset)  # a queue gone from the route
        if not isinstance(limit, ReadAllAvailable):
            options = self.options
            backlog = sum(high - current.get(mq, 0) for mq, high in latest.items())
            wanted = options.min_offsets_per_trigger
            waited = self._clock.monotonic() * 1000 - self._last_batch_ms
            if (
                self._target is None
                and wanted is not None
                and backlog < wanted
                and waited < options.max_trigger_delay_ms
            ):
                return start
            if options.max_offsets_per_trigger is not None:
                latest = rate_limit(current, latest, options.max_offsets_per_trigger)
        end = to_json(latest)
        if latest != current:
            self._last_batch_ms = self._clock.monotonic() * 1000
        return end

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        # A queue new since ``start`` (the topic was expanded) is read from its first
        # offset, 0: decided by the offsets alone, so a replay plans the same ranges.
        ranges: list[InputPartition] = list(
            plan_ranges(
                from_json(start),
                from_json(end),
                min_partitions=self.options.min_partitions,
                max_records_per_partition=self.options.max_records_per_partition,
            )
        )
        return ranges

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return read_partition(self.options, partition)

    def commit(self, end: dict[str, Any]) -> None:
        self._record_progress(from_json(end))

    def _record_progress(self, done: Offsets) -> None:
        group = self.options.consumer_group
        if group is None:
            return
        reader = client_pool.reader_for(self.options.endpoint)
        for mq, offset in done.items():
            if self._recorded.get(mq) != offset:
                reader.commit_offset(group, mq, offset)
                self._recorded[mq] = offset

    def stop(self) -> None:
        client_pool.discard(self.options.endpoint)
