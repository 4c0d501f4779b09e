"""``spark.readStream.format("orbitmq")``: availableNow and processing-time runs, restarts
from the checkpoint, kill -9 of the driver, rate limits, and data loss after retention."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from orbitmq.common import MessageQueue
from orbitmq.sync import AdminClient, Producer
from orbitmq.testing import ThreadedCluster
from tests.spark.conftest import WAIT_S, produce, spark_env, wait_for_max_offsets
from tests.support import REPO_ROOT

pytestmark = pytest.mark.timeout(300)


def stream(spark: SparkSession, namesrv_addr: str, topic: str, **options: str) -> DataFrame:
    reader = spark.readStream.format("orbitmq").option("namesrvAddr", namesrv_addr)
    return (
        reader.option("topic", topic)
        .option("startingOffsets", "earliest")
        .options(**options)
        .load()
    )


# ``trigger`` is Any: it goes to DataStreamWriter.trigger, whose overloads take one keyword each.
def to_parquet(df: DataFrame, out: Path, checkpoint: Path, **trigger: Any) -> StreamingQuery:
    writer = df.writeStream.format("parquet").option("path", str(out))
    return writer.option("checkpointLocation", str(checkpoint)).trigger(**trigger).start()


def run_available_now(df: DataFrame, out: Path, checkpoint: Path) -> None:
    query = to_parquet(df, out, checkpoint, availableNow=True)
    query.awaitTermination(WAIT_S * 6)
    assert query.exception() is None, query.exception()


def written(spark: SparkSession, out: Path) -> list[tuple[int, int, bytes]]:
    """(queueId, queueOffset, body) of every row the sink committed, sorted."""
    rows = spark.read.parquet(str(out)).select("queueId", "queueOffset", "body").collect()
    return sorted((r.queueId, r.queueOffset, bytes(r.body)) for r in rows)


def bodies(queue_id: int, start: int, end: int) -> list[bytes]:
    return [b"q%d-%d" % (queue_id, i) for i in range(start, end)]


def expected(*spans: tuple[int, int, int]) -> list[tuple[int, int, bytes]]:
    return sorted(
        (q, offset, b"q%d-%d" % (q, offset))
        for q, start, end in spans
        for offset in range(start, end)
    )


def test_available_now_then_restart_reads_every_message_once(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str, tmp_path: Path
) -> None:
    produce(producer, topic, bodies(0, 0, 60), queue_id=0)
    produce(producer, topic, bodies(3, 0, 25), queue_id=3)
    wait_for_max_offsets(cluster, topic, {0: 60, 3: 25})
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    run_available_now(stream(spark, cluster.namesrv_addr, topic), out, checkpoint)
    assert written(spark, out) == expected((0, 0, 60), (3, 0, 25))

    # New messages while stopped, on an old queue and on one not read before.
    produce(producer, topic, bodies(0, 60, 75), queue_id=0)
    produce(producer, topic, bodies(1, 0, 9), queue_id=1)
    wait_for_max_offsets(cluster, topic, {0: 75, 1: 9})
    run_available_now(stream(spark, cluster.namesrv_addr, topic), out, checkpoint)
    assert written(spark, out) == expected((0, 0, 75), (1, 0, 9), (3, 0, 25))


def test_processing_time_trigger_follows_new_messages_and_resumes(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str, tmp_path: Path
) -> None:
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = to_parquet(
        stream(spark, cluster.namesrv_addr, topic),
        out,
        checkpoint,
        processingTime="100 milliseconds",
    )
    try:
        produce(producer, topic, bodies(2, 0, 40), queue_id=2)
        wait_for_max_offsets(cluster, topic, {2: 40})
        query.processAllAvailable()
        produce(producer, topic, bodies(2, 40, 55), queue_id=2)
        wait_for_max_offsets(cluster, topic, {2: 55})
        query.processAllAvailable()
    finally:
        query.stop()
    assert written(spark, out) == expected((2, 0, 55))
    produce(producer, topic, bodies(2, 55, 70), queue_id=2)
    wait_for_max_offsets(cluster, topic, {2: 70})
    run_available_now(stream(spark, cluster.namesrv_addr, topic), out, checkpoint)
    assert written(spark, out) == expected((2, 0, 70))


def test_queues_added_to_the_topic_mid_stream_are_read_from_their_start(
    spark: SparkSession,
    cluster: ThreadedCluster,
    producer: Producer,
    admin: AdminClient,
    topic: str,
    tmp_path: Path,
) -> None:
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = to_parquet(
        stream(spark, cluster.namesrv_addr, topic),
        out,
        checkpoint,
        processingTime="100 milliseconds",
    )
    try:
        produce(producer, topic, bodies(0, 0, 10), queue_id=0)
        wait_for_max_offsets(cluster, topic, {0: 10})
        query.processAllAvailable()
        admin.create_topic(topic, queue_nums=6)  # expanded while the query runs
        produce(producer, topic, bodies(5, 0, 12), queue_id=5)
        wait_for_max_offsets(cluster, topic, {5: 12})
        deadline = time.monotonic() + WAIT_S
        while (5, 11, b"q5-11") not in written(spark, out):
            assert time.monotonic() < deadline, "the new queue was never read"
            query.processAllAvailable()
            time.sleep(0.2)
    finally:
        query.stop()
    assert written(spark, out) == expected((0, 0, 10), (5, 0, 12))


def test_max_offsets_per_trigger_sizes_the_batches(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str, tmp_path: Path
) -> None:
    produce(producer, topic, bodies(0, 0, 70), queue_id=0)
    produce(producer, topic, bodies(1, 0, 30), queue_id=1)
    wait_for_max_offsets(cluster, topic, {0: 70, 1: 30})
    sizes: list[int] = []
    df = stream(spark, cluster.namesrv_addr, topic, maxOffsetsPerTrigger="30")
    query = (
        df.writeStream.foreachBatch(lambda batch, _id: sizes.append(batch.count()))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(WAIT_S * 6)
    assert query.exception() is None
    assert sizes == [30, 30, 30, 10]


def test_consumer_group_shows_the_pipeline_progress(
    spark: SparkSession,
    cluster: ThreadedCluster,
    producer: Producer,
    admin: AdminClient,
    topic: str,
    tmp_path: Path,
) -> None:
    produce(producer, topic, bodies(1, 0, 20), queue_id=1)
    wait_for_max_offsets(cluster, topic, {1: 20})
    df = stream(spark, cluster.namesrv_addr, topic, consumerGroup="spark-archive")
    run_available_now(df, tmp_path / "out", tmp_path / "checkpoint")
    progress = admin.consumer_progress("spark-archive", topic)
    q1 = MessageQueue(topic, "broker-a", 1)
    assert [(q.consumer_offset, q.lag) for q in progress.queues if q.queue == q1] == [(20, 0)]


def test_kill_9_of_the_driver_then_resume_gives_every_message_once(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str, tmp_path: Path
) -> None:
    for queue_id in range(4):
        produce(producer, topic, bodies(queue_id, 0, 500), queue_id=queue_id)
    wait_for_max_offsets(cluster, topic, {q: 500 for q in range(4)})
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    argv = [sys.executable, "-m", "tests.spark.stream_driver", cluster.namesrv_addr, topic]
    argv += [str(out), str(checkpoint), "100"]
    env = {**os.environ, **spark_env(), "PYTHONPATH": str(REPO_ROOT)}
    driver = subprocess.Popen(argv, cwd=REPO_ROOT, env=env, start_new_session=True)
    try:
        commits = checkpoint / "commits"
        deadline = time.monotonic() + WAIT_S * 6
        while not (
            commits.is_dir() and len([p for p in commits.iterdir() if p.name.isdigit()]) >= 3
        ):
            assert driver.poll() is None, "the driver ended before it was killed"
            assert time.monotonic() < deadline, "the driver never committed three batches"
            time.sleep(0.05)
    finally:
        os.killpg(driver.pid, signal.SIGKILL)  # the Python driver and its JVM
        driver.wait(WAIT_S)
    done = len([p for p in commits.iterdir() if p.name.isdigit()])
    assert 3 <= done < 20, f"{done} of 20 batches were committed before the kill"

    run_available_now(stream(spark, cluster.namesrv_addr, topic), out, checkpoint)
    assert written(spark, out) == expected(*((q, 0, 500) for q in range(4)))


@pytest.fixture
def retained(tmp_path: Path) -> Iterator[ThreadedCluster]:
    """A cluster whose commit log files are 64 KiB and expire at once when cleaned."""
    settings = {
        "mapped_file_size_commit_log": 64 * 1024,
        "file_reserved_time": 0,
        "delete_commit_log_files_interval": 0,
    }
    with ThreadedCluster(tmp_path / "retained", store_settings=settings) as running:
        yield running


def apply_retention(cluster: ThreadedCluster) -> None:
    store = cluster.cluster.brokers[0].message_store
    store.clean_commit_log_service.execute_delete_files_manually()
    assert store.clean_resource_service.run_once() > 0


def test_retention_past_the_checkpoint_fails_or_skips_as_asked(
    spark: SparkSession, retained: ThreadedCluster, tmp_path: Path
) -> None:
    ns = retained.namesrv_addr
    with AdminClient(namesrv_addr=ns) as admin:
        admin.create_topic("Retained", queue_nums=1)
    padding = b"." * 1000
    with Producer("retained-pg", namesrv_addr=ns) as producer:
        produce(producer, "Retained", [b"q0-%d" % i for i in range(50)], queue_id=0)
        wait_for_max_offsets(retained, "Retained", {0: 50})
        out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
        run_available_now(stream(spark, ns, "Retained"), out, checkpoint)
        assert len(written(spark, out)) == 50
        later = [b"q0-%d" % i + padding for i in range(50, 300)]
        produce(producer, "Retained", later, queue_id=0, batch=20)  # a batch fits a 64 KiB file
    wait_for_max_offsets(retained, "Retained", {0: 300})
    apply_retention(retained)

    failing = to_parquet(stream(spark, ns, "Retained"), out, checkpoint, availableNow=True)
    with pytest.raises(PySparkException, match=r"offsets \[50, \d+\) of Retained .* are gone"):
        failing.awaitTermination(WAIT_S * 6)

    skipping = stream(spark, ns, "Retained", failOnDataLoss="false")
    run_available_now(skipping, out, checkpoint)
    offsets = [offset for _q, offset, _body in written(spark, out)]
    low = offsets[50]
    assert low > 50 and offsets == list(range(50)) + list(range(low, 300))

    # A batch read that names a lost offset: the same two ways.
    lost = orjson.dumps({"Retained": {"0": 10}}).decode()
    batch = spark.read.format("orbitmq").option("namesrvAddr", ns).option("topic", "Retained")
    with pytest.raises(PySparkException, match="failOnDataLoss=false"):
        batch.option("startingOffsets", lost).load().collect()
    rows = batch.option("startingOffsets", lost).option("failOnDataLoss", "false").load()
    assert rows.count() == 300 - low
