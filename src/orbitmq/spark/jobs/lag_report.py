"""``lag-report``: a consumer group's position on every queue it consumes: committed offset,
max offset, lag, and the store time of its oldest unconsumed message (read by Spark from
each lagging queue at the committed offset), as a table, CSV / Parquet and a PNG chart."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import orjson
import pyarrow as pa
from matplotlib.figure import Figure
from pyarrow import csv as pa_csv
from pyarrow import parquet as pq
from pyspark.sql import SparkSession

from orbitmq.common import MessageQueue
from orbitmq.spark.offset_ranges import to_json
from orbitmq.sync import AdminClient


@dataclass(frozen=True)
class QueueLag:
    """One queue of the group: where it is, how far behind, since when."""

    topic: str
    broker_name: str
    queue_id: int
    committed_offset: int
    max_offset: int
    #: Store time of the first message not consumed yet; None when nothing lags.
    oldest_unconsumed: dt.datetime | None

    @property
    def lag(self) -> int:
        return max(0, self.max_offset - self.committed_offset)


def _range_json(lagging: dict[MessageQueue, int], queues: Sequence[MessageQueue], end: bool) -> str:
    """One message per lagging queue ([committed, committed + 1)), nothing from the rest."""
    bounds = {mq: lagging[mq] + (1 if end else 0) if mq in lagging else -1 for mq in queues}
    return orjson.dumps(to_json(bounds)).decode()


def lag_report(
    spark: SparkSession, *, namesrv_addr: str, group: str, topic: str | None = None
) -> list[QueueLag]:
    """``group``'s lag on ``topic`` (every topic it has offsets in, when None), retry topic
    included, in (topic, broker, queue) order."""
    with AdminClient(namesrv_addr=namesrv_addr) as admin:
        progress = admin.consumer_progress(group, topic)
    queues = [q.queue for q in progress.queues]
    committed = {q.queue: max(0, q.consumer_offset) for q in progress.queues}
    lagging = {q.queue: committed[q.queue] for q in progress.queues if q.lag > 0}
    oldest: dict[MessageQueue, dt.datetime] = {}
    for name in sorted({mq.topic for mq in lagging}):
        in_topic = [mq for mq in queues if mq.topic == name]
        rows = (
            spark.read.format("orbitmq")
            .option("namesrvAddr", namesrv_addr)
            .option("topic", name)
            .option("startingOffsets", _range_json(lagging, in_topic, end=False))
            .option("endingOffsets", _range_json(lagging, in_topic, end=True))
            # Retention may have deleted the committed offset: then the oldest stored.
            .option("failOnDataLoss", "false")
            .load()
            .select("topic", "brokerName", "queueId", "storeTimestamp")
            .collect()
        )
        for row in rows:
            mq = MessageQueue(row.topic, row.brokerName, row.queueId)
            stamp = row.storeTimestamp
            oldest[mq] = stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)
    return [
        QueueLag(
            mq.topic,
            mq.broker_name,
            mq.queue_id,
            committed[mq],
            q.broker_offset,
            oldest.get(mq),
        )
        for mq, q in zip(queues, progress.queues, strict=True)
    ]


def _table(lags: Sequence[QueueLag]) -> pa.Table:
    return pa.table(
        {
            "topic": [q.topic for q in lags],
            "brokerName": [q.broker_name for q in lags],
            "queueId": pa.array([q.queue_id for q in lags], pa.int32()),
            "committedOffset": pa.array([q.committed_offset for q in lags], pa.int64()),
            "maxOffset": pa.array([q.max_offset for q in lags], pa.int64()),
            "lag": pa.array([q.lag for q in lags], pa.int64()),
            "oldestUnconsumed": pa.array(
                [q.oldest_unconsumed for q in lags], pa.timestamp("ms", tz="UTC")
            ),
        }
    )


def write_lag_report(
    lags: Sequence[QueueLag],
    *,
    group: str,
    csv: Path | None = None,
    parquet: Path | None = None,
    png: Path | None = None,
) -> None:
    """Write the report as CSV, Parquet and/or a bar chart of the lag per queue."""
    table = _table(lags)
    if csv is not None:
        pa_csv.write_csv(table, csv)
    if parquet is not None:
        pq.write_table(table, parquet)
    if png is not None:
        _chart(lags, group, png)


def _chart(lags: Sequence[QueueLag], group: str, png: Path) -> None:
    labels = [f"{q.topic}\n{q.broker_name}:{q.queue_id}" for q in lags]
    # A Figure of its own (no pyplot): no global state, no display needed on servers.
    figure = Figure(figsize=(max(6.0, 0.6 * len(lags) + 2), 4.5))
    axes = figure.subplots()
    axes.bar(range(len(lags)), [q.lag for q in lags], color="#c0392b")
    axes.set_xticks(range(len(lags)), labels, rotation=90, fontsize=7)
    axes.set_ylabel("messages behind")
    axes.set_title(f"consumer group {group}: lag per queue (total {sum(q.lag for q in lags):,})")
    figure.tight_layout()
    figure.savefig(png, dpi=100)
