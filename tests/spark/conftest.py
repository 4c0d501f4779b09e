"""Spark tests: one local SparkSession for this package (Java from the machine, the Python
workers on this interpreter, quiet logs) and one OrbitMQ cluster on a thread of its own, so
that Spark's blocking calls and its Python workers (other processes) can reach it."""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from orbitmq.common import Message, MessageQueue
from orbitmq.sync import AdminClient, Producer, QueueReader
from orbitmq.testing import ThreadedCluster

WAIT_S = 20


def spark_env() -> dict[str, str]:
    """What a Spark driver (here or in a subprocess) needs in its environment."""
    return {
        "SPARK_LOCAL_IP": "127.0.0.1",
        # Workers must run this interpreter (with orbitmq and pyarrow), not the PATH's.
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }


def new_session(app: str) -> SparkSession:
    """A local[2] session with the settings every Spark test (and test subprocess) uses."""
    os.environ.update(spark_env())
    session = (
        SparkSession.builder.master("local[2]")
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session


@pytest.fixture(scope="package")
def spark() -> Iterator[SparkSession]:
    session = new_session("orbitmq-tests")
    yield session
    session.stop()


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    with ThreadedCluster(tmp_path_factory.mktemp("spark-cluster")) as running:
        yield running


@pytest.fixture(scope="package")
def admin(cluster: ThreadedCluster) -> Iterator[AdminClient]:
    with AdminClient(namesrv_addr=cluster.namesrv_addr) as client:
        yield client


@pytest.fixture(scope="package")
def producer(cluster: ThreadedCluster) -> Iterator[Producer]:
    with Producer("spark-tests", namesrv_addr=cluster.namesrv_addr) as client:
        yield client


def produce(
    producer: Producer,
    topic: str,
    bodies: Sequence[bytes],
    *,
    queue_id: int = 0,
    tags: Sequence[str | None] | None = None,
    keys: Sequence[list[str]] | None = None,
    properties: dict[str, str] | None = None,
    batch: int = 200,
) -> None:
    """Send ``bodies`` to one queue of ``topic`` on broker-a, in order, ``batch`` at a time."""
    mq = MessageQueue(topic, "broker-a", queue_id)
    messages = []
    for i, body in enumerate(bodies):
        msg = Message(topic, body, properties=dict(properties or {}))
        if tags is not None and tags[i] is not None:
            msg.tags = tags[i]
        if keys is not None:
            msg.keys = keys[i]
        messages.append(msg)
    for start in range(0, len(messages), batch):
        producer.send(messages[start : start + batch], queue=mq)


def wait_for_max_offsets(cluster: ThreadedCluster, topic: str, expected: dict[int, int]) -> None:
    """Until the consume queues of ``topic`` reach ``expected`` (queue id -> max offset):
    they are built from the commit log in the background."""
    deadline = time.monotonic() + WAIT_S
    with QueueReader(cluster.namesrv_addr) as reader:
        while True:
            bounds = reader.queue_offsets(topic)
            got = {mq.queue_id: high for mq, (_low, high) in bounds.items()}
            if all(got.get(q, 0) >= n for q, n in expected.items()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: max offsets {got}, waited for {expected}")
            time.sleep(0.02)


def wait_for_count(cluster: ThreadedCluster, topic: str, count: int) -> None:
    """Until the consume queues of ``topic`` hold ``count`` messages in all."""
    deadline = time.monotonic() + WAIT_S
    with QueueReader(cluster.namesrv_addr) as reader:
        while True:
            got = sum(high - low for low, high in reader.queue_offsets(topic).values())
            if got >= count:
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}: {got} messages, waited for {count}")
            time.sleep(0.02)


@pytest.fixture
def topic(admin: AdminClient, request: pytest.FixtureRequest) -> str:
    """A fresh 4-queue topic named after the test."""
    words = re.split(r"[^A-Za-z0-9]+", request.node.name)[1:]
    name = "Spark" + "".join(w.title() for w in words)[:60]
    admin.create_topic(name, queue_nums=4)
    return name


def checkpoint_dir(tmp_path: Path, name: str = "checkpoint") -> str:
    return str(tmp_path / name)
