"""``archive``: a topic into Parquet files partitioned by store date (and optionally by topic
and queue), incrementally: each run reads what arrived since the last one (Spark's
checkpoint) and Spark's file sink commits each batch's files once, so the archive holds
every message exactly once however often runs are repeated or killed."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pyspark.sql import SparkSession
from pyspark.sql.functions import col, to_date
from pyspark.sql.streaming.listener import StreamingQueryListener

from orbitmq.spark.options import OptionError

#: How long to wait for Spark's listener bus to deliver a finished query's events.
_EVENTS_WAIT_S: Final = 30.0
#: ``--partition-by`` names and the columns each adds to the directory layout.
PARTITION_COLUMNS: Final = {
    "date": ("date",),
    "topic": ("topic",),
    "queue": ("brokerName", "queueId"),
}


class _RowCounter(StreamingQueryListener):
    """Sums the rows of every batch of the queries it hears about (all of a run's batches,
    where ``recentProgress`` keeps only the last hundred). Events arrive in order, after the
    fact: a query's termination event comes after all its progress events."""

    def __init__(self) -> None:
        self.rows: dict[str, int] = {}
        self.batches: dict[str, int] = {}
        self._ended: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def ended(self, run_id: str) -> threading.Event:
        with self._lock:
            return self._ended.setdefault(run_id, threading.Event())

    def onQueryStarted(self, event: object) -> None:
        pass

    def onQueryProgress(self, event: object) -> None:
        progress = event.progress  # type: ignore[attr-defined]
        query = str(progress.runId)
        self.rows[query] = self.rows.get(query, 0) + progress.numInputRows
        if progress.numInputRows:
            self.batches[query] = self.batches.get(query, 0) + 1

    def onQueryIdle(self, event: object) -> None:
        pass

    def onQueryTerminated(self, event: object) -> None:
        self.ended(str(event.runId)).set()  # type: ignore[attr-defined]


@dataclass(frozen=True)
class ArchiveSummary:
    """What one run archived."""

    rows: int
    batches: int
    output: str


def archive(
    spark: SparkSession,
    *,
    namesrv_addr: str,
    topic: str,
    output: str,
    checkpoint: str,
    partition_by: Sequence[str] = ("date",),
    max_offsets_per_trigger: int | None = None,
    consumer_group: str | None = None,
) -> ArchiveSummary:
    """Archive what ``topic`` holds beyond the last run's checkpoint (Trigger.AvailableNow).
    ``date`` is the store date in the session's time zone (spark.sql.session.timeZone)."""
    unknown = [p for p in partition_by if p not in PARTITION_COLUMNS]
    if unknown:
        raise OptionError(f"partition by {unknown}: choose among {list(PARTITION_COLUMNS)}")
    reader = (
        spark.readStream.format("orbitmq")
        .option("namesrvAddr", namesrv_addr)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
    )
    if max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    if consumer_group is not None:
        reader = reader.option("consumerGroup", consumer_group)
    rows = reader.load().withColumn("date", to_date(col("storeTimestamp")))
    columns = [c for p in partition_by for c in PARTITION_COLUMNS[p]]
    counter = _RowCounter()
    spark.streams.addListener(counter)
    try:
        query = (
            rows.writeStream.format("parquet")
            .option("path", output)
            .option("checkpointLocation", checkpoint)
            .partitionBy(*columns)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        failure = query.exception()
        if failure is not None:
            raise failure
        run = str(query.runId)
        if not counter.ended(run).wait(_EVENTS_WAIT_S):
            raise RuntimeError("Spark did not report the end of the archive query")
    finally:
        spark.streams.removeListener(counter)
    return ArchiveSummary(
        rows=counter.rows.get(run, 0), batches=counter.batches.get(run, 0), output=output
    )
