"""The Spark jobs and the source on a Spark standalone cluster (a master and a worker from
pyspark's own classes), not ``local[N]``: executors are JVMs of the worker with Python workers
of their own. Both ways of getting OrbitMQ to them are tested: the package installed in the
executors' interpreter, and a bare interpreter with OrbitMQ shipped as a zip (--py-files)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import orbitmq.spark.jobs
from orbitmq.sync import Producer
from orbitmq.testing import ThreadedCluster
from tests.spark.conftest import produce, wait_for_max_offsets
from tests.spark.standalone import (
    SPARK_HOME,
    StandaloneSpark,
    bare_python,
    orbitmq_zip,
    standalone_spark,
)

pytestmark = pytest.mark.timeout(300)

STREAM_DRIVER = Path(__file__).with_name("cluster_stream.py")
JOBS_MAIN = Path(orbitmq.spark.jobs.__file__).with_name("__main__.py")
#: A job on a cold cluster starts an executor JVM and its Python workers: tens of seconds
#: on a loaded 2-core machine.
JOB_TIMEOUT_S = 180


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneSpark]:
    with standalone_spark(tmp_path_factory.mktemp("standalone")) as running:
        yield running


def installed_env() -> dict[str, str]:
    """A driver whose executors run this interpreter, where OrbitMQ is installed."""
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    if "PYTHONPATH" in env:
        # A development checkout put on the path (not installed): the executors import the
        # same code as the driver.
        env["PYSPARK_SUBMIT_ARGS"] = (
            f"--conf spark.executorEnv.PYTHONPATH={env['PYTHONPATH']} pyspark-shell"
        )
    return env


def run(args: list[str], env: dict[str, str], standalone: StandaloneSpark) -> str:
    done = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=JOB_TIMEOUT_S, check=False
    )
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-5000:], standalone.logs())
    return done.stdout


def rows(directory: Path) -> list[tuple[int, int, bytes]]:
    """(queueId, queueOffset, body) of every row Spark wrote under ``directory``."""
    table = pq.read_table(directory, columns=["queueId", "queueOffset", "body"])
    return sorted(zip(*(table.column(c).to_pylist() for c in table.column_names), strict=True))


def fill(producer: Producer, cluster: ThreadedCluster, topic: str) -> list[tuple[int, int, bytes]]:
    produce(producer, topic, [b"a-%d" % i for i in range(60)], queue_id=0)
    produce(producer, topic, [b"c-%d" % i for i in range(25)], queue_id=3)
    wait_for_max_offsets(cluster, topic, {0: 60, 3: 25})
    return sorted(
        [(0, i, b"a-%d" % i) for i in range(60)] + [(3, i, b"c-%d" % i) for i in range(25)]
    )


def test_archive_job_on_the_cluster_with_the_package_installed(
    standalone: StandaloneSpark,
    cluster: ThreadedCluster,
    producer: Producer,
    topic: str,
    tmp_path: Path,
) -> None:
    expected = fill(producer, cluster, topic)
    out = tmp_path / "archive"
    command = [sys.executable, "-m", "orbitmq.cli", "pipeline", "archive"]
    command += ["-n", cluster.namesrv_addr, "--master", standalone.master_url, "--topic", topic]
    command += ["--output", str(out), "--checkpoint", str(tmp_path / "checkpoint")]
    output = run([*command, "--partition-by", "date,queue"], installed_env(), standalone)
    assert "messages archived" in output and "85" in output
    assert rows(out) == expected
    queue_dirs = {p.parent.name for p in out.rglob("*.parquet")}
    assert queue_dirs == {"queueId=0", "queueId=3"}
    # It ran on the cluster: the master lists the job as an application it served.
    names = {app["name"] for app in standalone.completed_apps()}
    assert "orbitmq pipeline archive" in names


def test_stream_read_on_the_cluster_with_the_package_installed(
    standalone: StandaloneSpark,
    cluster: ThreadedCluster,
    producer: Producer,
    topic: str,
    tmp_path: Path,
) -> None:
    expected = fill(producer, cluster, topic)
    out = tmp_path / "out"
    args = [cluster.namesrv_addr, topic, str(out), str(tmp_path / "ckpt"), standalone.master_url]
    run([sys.executable, str(STREAM_DRIVER), *args], installed_env(), standalone)
    assert rows(out) == expected


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A Python without OrbitMQ (driver and executors) and the zip that ships it."""
    root = tmp_path_factory.mktemp("bare")
    return bare_python(root / "venv"), orbitmq_zip(root / "orbitmq.zip")


def bare_env(python: Path, zipped: Path) -> dict[str, str]:
    """A submitting machine without OrbitMQ installed either: the driver and the Python
    workers it starts itself (planning the source's partitions and offsets) find the zip on
    PYTHONPATH; the executors get it from --py-files only (Spark does not pass PYTHONPATH)."""
    env = dict(os.environ, PYTHONPATH=str(zipped))
    env.update(SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=str(python))
    env["PYSPARK_DRIVER_PYTHON"] = str(python)
    return env


def spark_submit(standalone: StandaloneSpark, zipped: Path | None, *args: str) -> list[str]:
    shipped = ["--py-files", str(zipped)] if zipped is not None else []
    return [
        str(SPARK_HOME / "bin" / "spark-submit"),
        *("--master", standalone.master_url, *shipped),
        *("--conf", "spark.executor.memory=512m", "--conf", "spark.ui.enabled=false"),
        *args,
    ]


def test_archive_job_with_the_package_shipped_as_py_files(
    standalone: StandaloneSpark,
    bare: tuple[Path, Path],
    cluster: ThreadedCluster,
    producer: Producer,
    topic: str,
    tmp_path: Path,
) -> None:
    python, zipped = bare
    expected = fill(producer, cluster, topic)
    out = tmp_path / "archive"
    job = ["archive", "-n", cluster.namesrv_addr, "--topic", topic, "--output", str(out)]
    job += ["--checkpoint", str(tmp_path / "checkpoint")]
    command = spark_submit(standalone, zipped, str(JOBS_MAIN), *job)
    output = run(command, bare_env(python, zipped), standalone)
    assert "messages archived" in output and "85" in output
    assert rows(out) == expected


@pytest.mark.fault  # long: one more application on the cluster (about a minute, loaded)
def test_own_stream_job_with_the_package_shipped_as_py_files(
    standalone: StandaloneSpark,
    bare: tuple[Path, Path],
    cluster: ThreadedCluster,
    producer: Producer,
    topic: str,
    tmp_path: Path,
) -> None:
    python, zipped = bare
    expected = fill(producer, cluster, topic)
    out = tmp_path / "stream"
    args = [cluster.namesrv_addr, topic, str(out), str(tmp_path / "ckpt")]
    command = spark_submit(standalone, zipped, str(STREAM_DRIVER), *args)
    run(command, bare_env(python, zipped), standalone)
    assert rows(out) == expected


@pytest.mark.fault  # long: one more application on the cluster (about a minute, loaded)
def test_without_py_files_the_executors_lack_orbitmq(
    standalone: StandaloneSpark,
    bare: tuple[Path, Path],
    cluster: ThreadedCluster,
    producer: Producer,
    topic: str,
    tmp_path: Path,
) -> None:
    """The control for the tests above: the same stream read, the zip on the driver's
    PYTHONPATH but not shipped, fails in the executors: they import only what is shipped."""
    python, zipped = bare
    fill(producer, cluster, topic)
    args = [cluster.namesrv_addr, topic, str(tmp_path / "out"), str(tmp_path / "ckpt")]
    # One failed task attempt is enough.
    command = spark_submit(standalone, None, "--conf", "spark.task.maxFailures=1")
    done = subprocess.run(
        [*command, str(STREAM_DRIVER), *args],
        env=bare_env(python, zipped),
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S,
        check=False,
    )
    assert done.returncode != 0
    # A task failed (in an executor's Python worker: the driver's planning found the package).
    failed = r"Task \d+ in stage [\d.]+ failed 1 times.*?No module named 'orbitmq'"
    assert re.search(failed, done.stderr, re.S), done.stderr[-5000:]
