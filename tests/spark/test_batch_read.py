"""``spark.read.format("orbitmq")``: exact offset ranges, timestamp starts, the tag filter and
what each row carries."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from orbitmq.common import Message, MessageQueue
from orbitmq.sync import AdminClient, Producer, QueueReader
from orbitmq.testing import ThreadedCluster
from tests.spark.conftest import produce, wait_for_max_offsets

pytestmark = pytest.mark.timeout(180)


def read(spark: SparkSession, cluster: ThreadedCluster, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format("orbitmq").option("namesrvAddr", cluster.namesrv_addr)
    return reader.option("topic", topic).options(**options).load()


def offsets_by_queue(df: DataFrame) -> dict[int, list[int]]:
    result: dict[int, list[int]] = {}
    for row in df.select("queueId", "queueOffset").collect():
        result.setdefault(row.queueId, []).append(row.queueOffset)
    return {q: sorted(o) for q, o in result.items()}


def test_reads_exactly_the_requested_offset_ranges(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str
) -> None:
    for queue_id, count in ((0, 40), (1, 25), (2, 7)):
        produce(
            producer, topic, [b"q%d-%d" % (queue_id, i) for i in range(count)], queue_id=queue_id
        )
    wait_for_max_offsets(cluster, topic, {0: 40, 1: 25, 2: 7})

    everything = read(spark, cluster, topic)
    assert offsets_by_queue(everything) == {
        0: list(range(40)),
        1: list(range(25)),
        2: list(range(7)),
    }

    starting = orjson.dumps({topic: {"0": 10, "broker-a:1": 3, "2": -2}}).decode()
    ending = orjson.dumps({topic: {"0": 17, "1": -1, "2": 5}}).decode()
    ranged = read(spark, cluster, topic, startingOffsets=starting, endingOffsets=ending)
    assert offsets_by_queue(ranged) == {
        0: list(range(10, 17)),  # end exclusive
        1: list(range(3, 25)),  # -1: latest
        2: list(range(0, 5)),  # -2: earliest
    }
    # Split into partitions of at most 4 offsets: the same rows.
    split = read(
        spark,
        cluster,
        topic,
        startingOffsets=starting,
        endingOffsets=ending,
        maxRecordsPerPartition="4",
    )
    assert split.rdd.getNumPartitions() == 2 + 6 + 2
    assert offsets_by_queue(split) == offsets_by_queue(ranged)
    bodies = {r.body for r in ranged.where("queueId = 0").collect()}
    assert bodies == {b"q0-%d" % i for i in range(10, 17)}


def test_rows_carry_tags_keys_properties_and_the_message_id(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str
) -> None:
    produce(
        producer,
        topic,
        [b"a", b"b"],
        tags=["TagA", None],
        keys=[["order-1", "user-9"], []],
        properties={"region": "eu", "trace": "t-1"},
    )
    wait_for_max_offsets(cluster, topic, {0: 2})
    rows = read(spark, cluster, topic).orderBy("queueOffset").collect()
    first, second = rows
    assert (first.topic, first.brokerName, first.queueId, first.queueOffset) == (
        topic,
        "broker-a",
        0,
        0,
    )
    assert first.tags == "TagA" and second.tags is None
    assert first.keys == ["order-1", "user-9"] and second.keys == []
    assert first.properties["region"] == "eu" and first.properties["trace"] == "t-1"
    assert first.properties["TAGS"] == "TagA" and second.properties.get("TAGS") is None
    # The id a RocketMQ consumer sees: the producer's UNIQ_KEY.
    assert first.msgId == first.properties["UNIQ_KEY"] and len(first.msgId) == 32
    # Nothing that depends on when the row was read (a consumer's MIN/MAX_OFFSET).
    assert "MIN_OFFSET" not in first.properties and "MAX_OFFSET" not in first.properties
    assert first.body == b"a" and first.reconsumeTimes == 0
    assert first.bornTimestamp <= first.storeTimestamp <= second.storeTimestamp


def test_tag_filter_is_applied_at_the_broker(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str
) -> None:
    tags = ["TagA", "TagB", "TagC", None] * 25
    produce(producer, topic, [b"%d" % i for i in range(100)], tags=tags)
    wait_for_max_offsets(cluster, topic, {0: 100})
    rows = read(spark, cluster, topic, subExpression="TagA || TagC").collect()
    assert sorted(r.queueOffset for r in rows) == [i for i in range(100) if i % 4 in (0, 2)]
    assert {r.tags for r in rows} == {"TagA", "TagC"}


def test_starts_at_a_timestamp(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str
) -> None:
    produce(producer, topic, [b"old-%d" % i for i in range(30)], queue_id=1)
    wait_for_max_offsets(cluster, topic, {1: 30})
    time.sleep(0.01)  # the new messages must carry a later store time than the old ones
    boundary_ms = int(time.time() * 1000)
    time.sleep(0.01)
    produce(producer, topic, [b"new-%d" % i for i in range(12)], queue_id=1)
    wait_for_max_offsets(cluster, topic, {1: 42})

    by_time = read(spark, cluster, topic, startingTimestamp=str(boundary_ms))
    assert sorted(r.body for r in by_time.collect()) == sorted(b"new-%d" % i for i in range(12))
    per_queue = orjson.dumps({topic: {"1": boundary_ms}}).decode()
    by_queue = read(spark, cluster, topic, startingOffsetsByTimestamp=per_queue)
    assert offsets_by_queue(by_queue) == {1: list(range(30, 42))}


def test_bad_options_fail_with_the_option_named(
    spark: SparkSession, cluster: ThreadedCluster, topic: str
) -> None:
    with pytest.raises(PySparkException, match="startingOffsets"):
        read(spark, cluster, topic, startingOffsets="{not json").collect()
    with pytest.raises(PySparkException, match='"topic" is required'):
        spark.read.format("orbitmq").option("namesrvAddr", cluster.namesrv_addr).load().collect()
    with pytest.raises(PySparkException, match="fixed schema"):
        spark.read.format("orbitmq").schema("body binary").option("topic", topic).load().collect()


def test_a_topic_on_two_brokers_reads_each_broker_s_queues(
    spark: SparkSession, tmp_path: Path
) -> None:
    with ThreadedCluster(tmp_path / "two", brokers=2) as two:
        with AdminClient(namesrv_addr=two.namesrv_addr) as admin:
            assert sorted(admin.create_topic("TwoBrokers", queue_nums=2)) == [
                "broker-a",
                "broker-b",
            ]
        with Producer("two-pg", namesrv_addr=two.namesrv_addr) as producer:
            for broker, count in (("broker-a", 7), ("broker-b", 5)):
                mq = MessageQueue("TwoBrokers", broker, 1)
                producer.send(
                    [Message("TwoBrokers", b"%s-%d" % (broker.encode(), i)) for i in range(count)],
                    queue=mq,
                )
        with QueueReader(two.namesrv_addr) as reader:
            deadline = time.monotonic() + 20
            while sum(h for _l, h in reader.queue_offsets("TwoBrokers").values()) < 12:
                assert time.monotonic() < deadline
                time.sleep(0.02)
        rows = read(spark, two, "TwoBrokers").collect()
        assert sorted((r.brokerName, r.queueId, r.queueOffset) for r in rows) == [
            ("broker-a", 1, i) for i in range(7)
        ] + [("broker-b", 1, i) for i in range(5)]
        # "1" names queue 1 on both brokers, "broker-b:1" only broker-b's.
        both = read(spark, two, "TwoBrokers", startingOffsets='{"TwoBrokers": {"1": 3}}')
        assert both.count() == 4 + 2
        one = read(spark, two, "TwoBrokers", startingOffsets='{"TwoBrokers": {"broker-b:1": 4}}')
        assert sorted((r.brokerName, r.queueOffset) for r in one.collect()) == [
            ("broker-a", i) for i in range(7)
        ] + [("broker-b", 4)]
