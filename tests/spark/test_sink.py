"""``df.write.format("orbitmq")`` and ``writeStream``: columns, queues by key hash, batched
sends, and message ids that a replay repeats."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from orbitmq.common.java_hash import java_string_hash
from orbitmq.sync import AdminClient, Producer
from orbitmq.testing import ThreadedCluster
from tests.spark.conftest import WAIT_S, produce, wait_for_count, wait_for_max_offsets

pytestmark = pytest.mark.timeout(300)


def write(df: DataFrame, cluster: ThreadedCluster, **options: str) -> None:
    df.write.format("orbitmq").option("namesrvAddr", cluster.namesrv_addr).options(**options).mode(
        "append"
    ).save()


def read_all(spark: SparkSession, cluster: ThreadedCluster, topic: str) -> DataFrame:
    reader = spark.read.format("orbitmq").option("namesrvAddr", cluster.namesrv_addr)
    return reader.option("topic", topic).load()


def test_batch_write_keeps_columns_and_per_key_order(
    spark: SparkSession, cluster: ThreadedCluster, topic: str
) -> None:
    rows = [
        (f"{key}-{seq}", f"Tag{key}", [key, "extra"], {"seq": str(seq)})
        for seq in range(50)
        for key in ("alpha", "beta", "gamma")
    ]
    df = spark.createDataFrame(
        rows, "body string, tags string, keys array<string>, properties map<string,string>"
    ).coalesce(1)
    write(df, cluster, topic=topic, sendBatchSize="16")
    wait_for_count(cluster, topic, 150)
    stored = read_all(spark, cluster, topic).collect()
    assert len(stored) == 150
    for key in ("alpha", "beta", "gamma"):
        mine = sorted((r for r in stored if r.keys[0] == key), key=lambda r: r.queueOffset)
        # One queue per key (RocketMQ's hash selector), in the order the task wrote them.
        assert {r.queueId for r in mine} == {abs(java_string_hash(key)) % 4}
        assert [r.body for r in mine] == [f"{key}-{s}".encode() for s in range(50)]
        assert {r.tags for r in mine} == {f"Tag{key}"}
        assert [r.properties["seq"] for r in mine] == [str(s) for s in range(50)]
        assert all(r.keys == [key, "extra"] for r in mine)
    ids = [r.msgId for r in stored]
    assert len(set(ids)) == 150 and all(len(i) == 32 for i in ids)


def test_rows_without_keys_go_round_robin_and_topic_may_be_a_column(
    spark: SparkSession, cluster: ThreadedCluster, admin: AdminClient, topic: str
) -> None:
    other = topic + "B"
    admin.create_topic(other, queue_nums=2)
    df = spark.createDataFrame(
        [(bytes([65 + i % 26]) * 10, topic if i % 3 else other) for i in range(90)],
        "body binary, topic string",
    ).coalesce(1)
    write(df, cluster)
    wait_for_count(cluster, topic, 60)
    wait_for_count(cluster, other, 30)
    per_queue = Counter(r.queueId for r in read_all(spark, cluster, topic).collect())
    assert sum(per_queue.values()) == 60 and sorted(per_queue.values()) == [15, 15, 15, 15]
    assert read_all(spark, cluster, other).count() == 30


def test_bad_frames_are_refused_with_the_column_named(
    spark: SparkSession, cluster: ThreadedCluster, topic: str
) -> None:
    cases = [
        (spark.createDataFrame([("x", 1)], "body string, partition int"), "partition"),
        (spark.createDataFrame([(1,)], "body int"), '"body" column'),
        (spark.createDataFrame([("x", 3)], "body string, keys int"), '"keys"'),
    ]
    for df, named in cases:
        with pytest.raises(PySparkException, match=named):
            write(df, cluster, topic=topic)
    appended_only = spark.createDataFrame([("x",)], "body string")
    with pytest.raises(PySparkException, match="only appends"):
        appended_only.write.format("orbitmq").option("namesrvAddr", cluster.namesrv_addr).option(
            "topic", topic
        ).mode("overwrite").save()
    no_topic = spark.createDataFrame([("x",)], "body string")
    with pytest.raises(PySparkException, match='"topic" option'):
        write(no_topic, cluster)
    empty_body = spark.createDataFrame([("x",), ("",)], "body string").coalesce(1)
    with pytest.raises(PySparkException, match="row 1 of partition 0: the body is empty"):
        write(empty_body, cluster, topic=topic)


def settled(cluster: ThreadedCluster) -> None:
    """Until the broker has dispatched everything it stored (so a count is final)."""
    store = cluster.cluster.brokers[0].message_store
    assert store.reput_message_service.wait_for_dispatch(store.commit_log.max_offset, WAIT_S)


def copy_topic(
    spark: SparkSession,
    cluster: ThreadedCluster,
    source: str,
    target: str,
    checkpoint: Path,
    **sink_options: str,
) -> BaseException | None:
    """Stream ``source`` into ``target`` through the sink (with ``sink_options``), 50 offsets
    a batch, until caught up; the error that stopped the query, if any."""
    rows = (
        spark.readStream.format("orbitmq")
        .option("namesrvAddr", cluster.namesrv_addr)
        .option("topic", source)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "50")
        .load()
        .select("body", "keys")
    )
    query = (
        rows.writeStream.format("orbitmq")
        .option("namesrvAddr", cluster.namesrv_addr)
        .option("topic", target)
        .option("checkpointLocation", str(checkpoint))
        .options(**sink_options)
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(WAIT_S * 6)
    except PySparkException as exc:
        return exc
    return query.exception()


def test_a_replayed_micro_batch_sends_the_same_message_ids(
    spark: SparkSession,
    cluster: ThreadedCluster,
    producer: Producer,
    admin: AdminClient,
    topic: str,
    tmp_path: Path,
) -> None:
    produce(producer, topic, [b"m-%d" % i for i in range(120)], queue_id=0)
    wait_for_max_offsets(cluster, topic, {0: 120})
    target = topic + "Copy"
    admin.create_topic(target, queue_nums=4)
    checkpoint = tmp_path / "checkpoint"

    assert copy_topic(spark, cluster, topic, target, checkpoint) is None
    wait_for_count(cluster, target, 120)
    first = {r.msgId: r.body for r in read_all(spark, cluster, target).collect()}
    assert sorted(first.values()) == sorted(b"m-%d" % i for i in range(120))
    # The state a crash leaves after the sink wrote batch 2 and before Spark committed it:
    # the batch is planned (offsets/2) but not committed (no commits/2). Spark runs it again.
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    assert copy_topic(spark, cluster, topic, target, checkpoint) is None
    wait_for_count(cluster, target, 140)
    again = read_all(spark, cluster, target).collect()
    assert len(again) == 120 + 20  # batch 2 held offsets 100..119
    by_id = Counter(r.msgId for r in again)
    assert set(by_id) == set(first)  # no new ids: every resent message repeats its id
    repeated = sorted(first[i] for i, n in by_id.items() if n == 2)
    assert repeated == sorted(b"m-%d" % i for i in range(100, 120))


@pytest.mark.parametrize(
    ("failpoint", "visible_after_failure"), [("before-commit:1", 50), ("after-commit:1", 100)]
)
def test_exactly_once_through_a_failure_around_the_commit(
    spark: SparkSession,
    cluster: ThreadedCluster,
    producer: Producer,
    admin: AdminClient,
    topic: str,
    tmp_path: Path,
    failpoint: str,
    visible_after_failure: int,
) -> None:
    produce(
        producer,
        topic,
        [b"m-%d" % i for i in range(120)],
        queue_id=0,
        keys=[[f"k{i % 5}"] for i in range(120)],
    )
    wait_for_max_offsets(cluster, topic, {0: 120})
    target = topic + "Once"
    admin.create_topic(target, queue_nums=4)
    checkpoint = tmp_path / "checkpoint"

    failed = copy_topic(
        spark, cluster, topic, target, checkpoint, exactlyOnce="true", failpoint=failpoint
    )
    assert failed is not None and "failpoint" in str(failed)
    settled(cluster)
    # Staged but uncommitted messages are invisible; committed ones are there.
    assert read_all(spark, cluster, target).count() == visible_after_failure

    assert copy_topic(spark, cluster, topic, target, checkpoint, exactlyOnce="true") is None
    wait_for_count(cluster, target, 120)
    settled(cluster)
    rows = read_all(spark, cluster, target).collect()
    assert sorted(r.body for r in rows) == sorted(b"m-%d" % i for i in range(120))  # each once
    for key in (f"k{i}" for i in range(5)):
        mine = sorted((r.queueOffset, r.body) for r in rows if r.keys == [key])
        assert {r.queueId for r in rows if r.keys == [key]} == {abs(java_string_hash(key)) % 4}
        assert [b for _o, b in mine] == sorted((b for _o, b in mine), key=lambda b: int(b[2:]))


def test_exactly_once_batch_write_is_visible_only_after_the_commit(
    spark: SparkSession, cluster: ThreadedCluster, topic: str
) -> None:
    df = spark.createDataFrame([(f"row-{i}",) for i in range(40)], "body string").repartition(3)
    write(df, cluster, topic=topic, exactlyOnce="true")
    wait_for_count(cluster, topic, 40)
    settled(cluster)
    rows = read_all(spark, cluster, topic).collect()
    assert sorted(r.body for r in rows) == sorted(f"row-{i}".encode() for i in range(40))
    assert len({r.msgId for r in rows}) == 40
    assert all("TRAN_MSG" not in r.properties for r in rows)

    failing = spark.createDataFrame([(f"late-{i}",) for i in range(10)], "body string").coalesce(1)
    with pytest.raises(PySparkException, match="failpoint"):
        write(failing, cluster, topic=topic, exactlyOnce="true", failpoint="before-commit")
    settled(cluster)
    assert read_all(spark, cluster, topic).count() == 40  # staged, never committed: invisible
