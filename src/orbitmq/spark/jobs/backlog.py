"""``rebalance-backlog`` (R48): when a group's consumers cannot catch up even one per queue,
move its backlog into a temporary topic with N times the queues, to be consumed by N times
the consumers, then return to the normal layout.

The procedure (seed 001, "消费堆积问题"), with this job as step 3:

1. fix what made the consumers slow, then stop all of the group's consumers (the job
   refuses to run while any is online);
2. the job creates ``<topic>_BACKLOG`` with ``factor`` x the queues of ``<topic>``;
3. the job copies each queue's unconsumed range ``[committed, max)`` into it: a message with
   keys goes to the queue its first key hashes to, in the order it was stored (a source
   queue is read by one task, front to back, never split), so per-key order holds; one
   without keys goes round robin. Messages keep their properties and message id (UNIQ_KEY),
   so a consumer can drop what it had already handled. Then the group's offsets on
   ``<topic>`` move to the end of what was copied;
4. start up to ``factor`` x the consumers of the group on ``<topic>_BACKLOG`` (and the
   usual ones on ``<topic>`` for new messages); the job has set the group's offsets there
   to where the copy began, so they start at the moved messages, not at the end;
5. when ``<topic>_BACKLOG`` is drained, stop its consumers and delete it.

A failure before step 3 ends leaves the offsets where they were: running the job again
copies the ranges again (the same ids), and nothing is lost.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import orjson
from pyspark.sql import SparkSession

from orbitmq.client import MQClientError
from orbitmq.common import MessageQueue
from orbitmq.spark.offset_ranges import to_json
from orbitmq.sync import AdminClient, QueueReader

#: Every column the sink takes from what the source read.
_COPIED = ("body", "tags", "keys", "properties")


@dataclass(frozen=True)
class BacklogMove:
    """What was moved: the source ranges, and the messages each temporary queue received
    in this run."""

    topic: str
    temp_topic: str
    ranges: dict[MessageQueue, tuple[int, int]]
    temp_queue_counts: dict[MessageQueue, int]

    @property
    def moved(self) -> int:
        return sum(end - start for start, end in self.ranges.values())


def rebalance_backlog(
    spark: SparkSession,
    *,
    namesrv_addr: str,
    topic: str,
    group: str,
    factor: int = 10,
    temp_topic: str | None = None,
    force: bool = False,
) -> BacklogMove:
    """Copy ``group``'s backlog on ``topic`` to ``temp_topic`` (``<topic>_BACKLOG``), which
    gets ``factor`` x the queues; then commit the group's offsets past what was copied."""
    if factor < 1:
        raise MQClientError(f"factor {factor} must be at least 1")
    temp = temp_topic or f"{topic}_BACKLOG"
    with AdminClient(namesrv_addr=namesrv_addr) as admin:
        online = admin.consumer_ids(group, topic)
        if online and not force:
            raise MQClientError(
                f"consumer group {group} has {len(online)} consumer(s) online ({online[0]}...):"
                " stop them before moving its backlog, or they consume it twice"
            )
        progress = admin.consumer_progress(group, topic)
        statuses = admin.topic_status(topic)
        per_broker = Counter(s.queue.broker_name for s in statuses)
        admin.create_topic(temp, queue_nums=factor * max(per_broker.values()))
    queues = [q for q in progress.queues if q.queue.topic == topic]
    ranges = {q.queue: (max(0, q.consumer_offset), q.broker_offset) for q in queues if q.lag > 0}
    every = [s.queue for s in statuses]
    # Queues without a backlog: from latest to latest, nothing.
    starting = to_json({mq: ranges.get(mq, (-1, -1))[0] for mq in every})
    ending = to_json({mq: ranges.get(mq, (-1, -1))[1] for mq in every})
    with QueueReader(namesrv_addr) as reader:
        before = {mq: high for mq, (_low, high) in reader.queue_offsets(temp).items()}
    if ranges:
        (
            spark.read.format("orbitmq")
            .option("namesrvAddr", namesrv_addr)
            .option("topic", topic)
            .option("startingOffsets", orjson.dumps(starting).decode())
            .option("endingOffsets", orjson.dumps(ending).decode())
            .option("failOnDataLoss", "false")
            .load()
            .select(*_COPIED)
            .write.format("orbitmq")
            .option("namesrvAddr", namesrv_addr)
            .option("topic", temp)
            .mode("append")
            .save()
        )
    with AdminClient(namesrv_addr=namesrv_addr) as admin:
        placed = {
            q.queue for q in admin.consumer_progress(group, temp).queues if q.consumer_offset >= 0
        }
    with QueueReader(namesrv_addr) as reader:
        # Without an offset on the new topic, the group's consumers would start at its end
        # (CONSUME_FROM_LAST_OFFSET) and skip the backlog: start them where the copy began.
        for mq, offset in before.items():
            if mq not in placed:
                reader.commit_offset(group, mq, offset)
        for mq, (_start, end) in ranges.items():
            reader.commit_offset(group, mq, end)
        after = reader.queue_offsets(temp)
    counts = {mq: high - before.get(mq, 0) for mq, (_low, high) in after.items()}
    return BacklogMove(topic, temp, ranges, counts)
