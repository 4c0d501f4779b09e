"""The exactly-once sink's halves that no verdict names (a task attempt killed after staging
them) are settled by the broker's check-back, which the sink's producers answer from the
batch's commit intent: rolled back, never visible; the committed rows are there once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from orbitmq.broker import BrokerController
from orbitmq.common.topic import RMQ_SYS_TRANS_HALF_TOPIC
from orbitmq.sync import AdminClient, Producer, QueueReader
from orbitmq.testing import ThreadedCluster
from tests.eventually import eventually
from tests.spark.conftest import WAIT_S, produce, wait_for_count, wait_for_max_offsets
from tests.spark.test_sink import copy_topic, read_all, write

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def fast_checks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    """A cluster whose broker checks a half 300 ms after it is stored, every 300 ms, and
    never discards one in a test's time: only an answer resolves it."""
    settings = {
        "transaction_time_out": 300,
        "transaction_check_interval": 300,
        "transaction_check_max": 10_000,
    }
    with ThreadedCluster(tmp_path_factory.mktemp("checks"), broker_settings=settings) as running:
        yield running


def broker(cluster: ThreadedCluster) -> BrokerController:
    return cluster.cluster.brokers[0]


def unresolved_halves(cluster: ThreadedCluster) -> list[int] | None:
    """The half topic's offsets no verdict or answer resolved yet; None when there are
    none (for ``eventually``)."""
    controller = broker(cluster)
    store = controller.message_store
    service = controller.transactional_message_service
    end = store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0)
    left = [o for o in range(end) if not service.is_resolved(o)]
    return left or None


def visible_count(cluster: ThreadedCluster, topic: str) -> int:
    """How many messages consumers of ``topic`` can read, once dispatch caught up."""
    store = broker(cluster).message_store
    assert store.reput_message_service.wait_for_dispatch(store.commit_log.max_offset, WAIT_S)
    with QueueReader(cluster.namesrv_addr) as reader:
        return sum(high - low for low, high in reader.queue_offsets(topic).values())


def all_resolved_by_answers(cluster: ThreadedCluster) -> None:
    """Until every half is resolved; none of them by a discard after the max checks."""
    eventually(lambda: unresolved_halves(cluster) is None, WAIT_S, what="every half resolved")
    check_service = broker(cluster).transactional_message_check_service
    assert check_service is not None and check_service.discarded_count == 0


def test_a_killed_attempts_halves_are_rolled_back_by_the_check_and_the_replay_commits_once(
    spark: SparkSession, fast_checks: ThreadedCluster, tmp_path: Path
) -> None:
    with (
        AdminClient(namesrv_addr=fast_checks.namesrv_addr) as admin,
        Producer("check-back-source", namesrv_addr=fast_checks.namesrv_addr) as producer,
    ):
        admin.create_topic("CheckBackSource", queue_nums=1)
        admin.create_topic("CheckBackTarget", queue_nums=4)
        produce(producer, "CheckBackSource", [b"m-%d" % i for i in range(120)])
    wait_for_max_offsets(fast_checks, "CheckBackSource", {0: 120})
    checkpoint = tmp_path / "checkpoint"

    # The first batch's task stages a half, then its Python worker dies: the batch fails.
    failed = copy_topic(
        spark,
        fast_checks,
        "CheckBackSource",
        "CheckBackTarget",
        checkpoint,
        exactlyOnce="true",
        failpoint="task-exit",
    )
    assert failed is not None
    orphans = unresolved_halves(fast_checks)
    assert orphans, "the killed attempt staged nothing"
    # No intent yet (the batch's replay records it): the checks are answered UNKNOW.
    assert visible_count(fast_checks, "CheckBackTarget") == 0

    assert (
        copy_topic(
            spark, fast_checks, "CheckBackSource", "CheckBackTarget", checkpoint, exactlyOnce="true"
        )
        is None
    )
    wait_for_count(fast_checks, "CheckBackTarget", 120)
    all_resolved_by_answers(fast_checks)
    rows = read_all(spark, fast_checks, "CheckBackTarget").collect()
    assert sorted(r.body for r in rows) == sorted(b"m-%d" % i for i in range(120))  # once


def test_a_failed_batch_writes_halves_are_rolled_back_by_the_check(
    spark: SparkSession, fast_checks: ThreadedCluster
) -> None:
    with AdminClient(namesrv_addr=fast_checks.namesrv_addr) as admin:
        admin.create_topic("CheckBackBatch", queue_nums=2)
    df = spark.createDataFrame([(f"row-{i}",) for i in range(30)], "body string").repartition(2)
    # Spark raises the job's failure as a Py4JJavaError here (py4j has no type hints).
    with pytest.raises(Exception, match="Python worker exited"):
        write(df, fast_checks, topic="CheckBackBatch", exactlyOnce="true", failpoint="task-exit")
    # The write's abort is recorded; the killed attempt's halves are rolled back on check.
    all_resolved_by_answers(fast_checks)
    assert visible_count(fast_checks, "CheckBackBatch") == 0


def test_a_commit_that_died_after_its_intent_is_finished_by_the_check(
    spark: SparkSession, fast_checks: ThreadedCluster, tmp_path: Path
) -> None:
    with (
        AdminClient(namesrv_addr=fast_checks.namesrv_addr) as admin,
        Producer("check-back-source", namesrv_addr=fast_checks.namesrv_addr) as producer,
    ):
        admin.create_topic("CheckBackIntent", queue_nums=1)
        admin.create_topic("CheckBackIntentCopy", queue_nums=4)
        produce(producer, "CheckBackIntent", [b"m-%d" % i for i in range(120)])
    wait_for_max_offsets(fast_checks, "CheckBackIntent", {0: 120})
    checkpoint = tmp_path / "checkpoint"

    # Batch 1's commit records its intent, then stops before any verdict (a dead driver).
    failed = copy_topic(
        spark,
        fast_checks,
        "CheckBackIntent",
        "CheckBackIntentCopy",
        checkpoint,
        exactlyOnce="true",
        failpoint="before-commit:1",
    )
    assert failed is not None and "failpoint" in str(failed)
    # The check-back commits what the intent names, with no replay: batches 0 and 1.
    all_resolved_by_answers(fast_checks)
    assert visible_count(fast_checks, "CheckBackIntentCopy") == 100

    # The replay finds the intent (its halves committed already) and drops its own.
    assert (
        copy_topic(
            spark,
            fast_checks,
            "CheckBackIntent",
            "CheckBackIntentCopy",
            checkpoint,
            exactlyOnce="true",
        )
        is None
    )
    all_resolved_by_answers(fast_checks)
    rows = read_all(spark, fast_checks, "CheckBackIntentCopy").collect()
    assert sorted(r.body for r in rows) == sorted(b"m-%d" % i for i in range(120))  # once
