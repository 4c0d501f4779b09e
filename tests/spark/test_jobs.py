"""``orbitmq pipeline archive | lag-report | rebalance-backlog`` end to end on generated
backlogs, through the command line (in this process: the commands find the tests' session)."""

from __future__ import annotations

import csv
import datetime as dt
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pyspark.sql import SparkSession

from orbitmq.common import MessageQueue
from orbitmq.common.java_hash import java_string_hash
from orbitmq.spark.jobs.commands import pipeline
from orbitmq.sync import AdminClient, Producer, PushConsumer, QueueReader
from orbitmq.testing import ThreadedCluster
from tests.spark.conftest import produce, wait_for_count, wait_for_max_offsets

pytestmark = pytest.mark.timeout(300)


def run(cluster: ThreadedCluster, *args: str) -> Result:
    result = CliRunner().invoke(pipeline, [args[0], "-n", cluster.namesrv_addr, *args[1:]])
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def test_archive_writes_each_message_once_partitioned_by_date_and_queue(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str, tmp_path: Path
) -> None:
    produce(producer, topic, [b"a-%d" % i for i in range(30)], queue_id=0)
    produce(producer, topic, [b"b-%d" % i for i in range(12)], queue_id=2)
    wait_for_max_offsets(cluster, topic, {0: 30, 2: 12})
    out, checkpoint = tmp_path / "archive", tmp_path / "checkpoint"
    args = ["archive", "--topic", topic, "--output", str(out), "--checkpoint", str(checkpoint)]
    args += ["--partition-by", "date,queue"]
    first = run(cluster, *args)
    assert "messages archived" in first.output and "42" in first.output

    produce(producer, topic, [b"a-%d" % i for i in range(30, 35)], queue_id=0)
    wait_for_max_offsets(cluster, topic, {0: 35})
    second = run(cluster, *args)
    assert " 5 " in second.output  # only what arrived since

    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r.queueId, r.queueOffset) for r in rows) == sorted(
        [(0, i) for i in range(35)] + [(2, i) for i in range(12)]
    )
    today = {r.date for r in rows}
    assert len(today) == 1
    (day,) = today
    layout = {p.relative_to(out).parts[:3] for p in out.rglob("*.parquet")}
    assert layout == {
        (f"date={day.isoformat()}", "brokerName=broker-a", "queueId=0"),
        (f"date={day.isoformat()}", "brokerName=broker-a", "queueId=2"),
    }


def test_lag_report_table_files_and_chart(
    spark: SparkSession, cluster: ThreadedCluster, producer: Producer, topic: str, tmp_path: Path
) -> None:
    produce(producer, topic, [b"x-%d" % i for i in range(30)], queue_id=0)
    produce(producer, topic, [b"y-%d" % i for i in range(10)], queue_id=1)
    wait_for_max_offsets(cluster, topic, {0: 30, 1: 10})
    group = "lag-report-cg"
    q0, q1 = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-a", 1)
    with QueueReader(cluster.namesrv_addr) as reader:
        reader.commit_offset(group, q0, 12)
        reader.commit_offset(group, q1, 10)
        [twelfth] = next(iter(reader.read(q0, 12, 13)))
    files = {"csv": tmp_path / "lag.csv", "parquet": tmp_path / "lag.parquet"}
    png = tmp_path / "lag.png"
    result = run(
        cluster,
        "lag-report",
        *("--group", group, "--topic", topic),
        *("--csv", str(files["csv"]), "--parquet", str(files["parquet"]), "--png", str(png)),
    )
    assert "total lag" in result.output and "18" in result.output
    with files["csv"].open() as f:
        table = {(r["brokerName"], r["queueId"]): r for r in csv.DictReader(f)}
    row0 = table[("broker-a", "0")]
    assert (row0["committedOffset"], row0["maxOffset"], row0["lag"]) == ("12", "30", "18")
    oldest = dt.datetime.fromisoformat(row0["oldestUnconsumed"].replace("Z", "+00:00"))
    assert int(oldest.timestamp() * 1000) == twelfth.store_timestamp
    assert (
        table[("broker-a", "1")]["lag"] == "0"
        and table[("broker-a", "1")]["oldestUnconsumed"] == ""
    )
    parquet = spark.read.parquet(str(files["parquet"])).collect()
    assert sum(r.lag for r in parquet) == 18
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000


def test_rebalance_backlog_moves_the_backlog_keeping_per_key_order(
    spark: SparkSession,
    cluster: ThreadedCluster,
    producer: Producer,
    admin: AdminClient,
    topic: str,
) -> None:
    keys = [f"order-{i % 7}" for i in range(120)]
    for queue_id in (0, 1):
        produce(
            producer,
            topic,
            [b"q%d-%d" % (queue_id, i) for i in range(120)],
            queue_id=queue_id,
            keys=[[k] for k in keys],
        )
    wait_for_max_offsets(cluster, topic, {0: 120, 1: 120})
    group = "backlog-cg"
    q0, q1 = MessageQueue(topic, "broker-a", 0), MessageQueue(topic, "broker-a", 1)
    with QueueReader(cluster.namesrv_addr) as reader:
        reader.commit_offset(group, q0, 50)  # behind by 70
        reader.commit_offset(group, q1, 100)  # behind by 20
        original = {
            m.body: m.unique_key
            for mq, start in ((q0, 50), (q1, 100))
            for batch in reader.read(mq, start, 120)
            for m in batch
        }

    # Refused while a consumer of the group is online (this one on another topic, so that it
    # leaves the backlog alone).
    admin.create_topic(topic + "Other", queue_nums=1)
    online = PushConsumer(group, namesrv_addr=cluster.namesrv_addr)
    online.subscribe(topic + "Other")
    online.register_listener(lambda msgs, ctx: None)
    with online:
        refused = CliRunner().invoke(
            pipeline,
            ["rebalance-backlog", "-n", cluster.namesrv_addr, "--topic", topic, "--group", group],
        )
        assert refused.exit_code != 0 and "stop them" in str(refused.exception)

    result = run(cluster, "rebalance-backlog", "--topic", topic, "--group", group, "--factor", "3")
    temp = f"{topic}_BACKLOG"
    assert temp in admin.list_topics()
    assert "messages│90" in "".join(result.output.split())
    wait_for_count(cluster, temp, 90)
    moved = (
        spark.read.format("orbitmq")
        .option("namesrvAddr", cluster.namesrv_addr)
        .option("topic", temp)
        .load()
        .collect()
    )
    assert len(admin.topic_status(temp)) == 12  # 3 x the 4 queues of the topic
    assert {r.body: r.msgId for r in moved} == original  # every message once, ids kept
    by_key: dict[str, list[tuple[int, int, bytes]]] = defaultdict(list)
    for r in moved:
        by_key[r.keys[0]].append((r.queueId, r.queueOffset, r.body))
    for key, rows in by_key.items():
        # One temporary queue per key (hash of the key), in the order of the source queues.
        assert {q for q, _o, _b in rows} == {abs(java_string_hash(key)) % 12}
        in_temp_order = [b for _q, _o, b in sorted(rows)]
        for source in (b"q0-", b"q1-"):
            mine = [b for b in in_temp_order if b.startswith(source)]
            assert mine == sorted(mine, key=lambda b: int(b.split(b"-")[1]))
    progress = {q.queue: q.consumer_offset for q in admin.consumer_progress(group, topic).queues}
    assert (progress[q0], progress[q1]) == (120, 120)
    on_temp = admin.consumer_progress(group, temp).queues
    assert {q.consumer_offset for q in on_temp} == {0}  # consumers start at the moved messages
