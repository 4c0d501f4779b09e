"""A Spark standalone cluster for tests: one master and one worker, started from pyspark's own
``spark-class`` (the jars pip installed), on free ports, with their work and log directories
under a temporary directory. Also the two ways a job gets OrbitMQ onto executors: this
interpreter (the package installed), or a bare interpreter that lacks OrbitMQ plus a zip of the
package shipped with the job."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import pyspark

import orbitmq
import pyspark_orbitmq
from tests.eventually import eventually

SPARK_HOME = Path(pyspark.__file__).resolve().parent
#: Generous: two JVMs start on a loaded 2-core machine (about 5-10 s when it is busy).
START_TIMEOUT_S = 90.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def daemon_env(log_dir: Path) -> dict[str, str]:
    """The master's and worker's environment: this one without PYTHONPATH, so that an
    executor's Python imports only what its interpreter has installed or the job ships."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        SPARK_HOME=str(SPARK_HOME),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOG_DIR=str(log_dir),
        SPARK_DAEMON_MEMORY="256m",  # the master's and worker's own heaps
    )
    return env


@dataclass
class StandaloneSpark:
    """A running master and worker (each in a process group of its own, with the executors and
    Python workers the worker starts). Used from one test thread."""

    master_url: str
    ui_url: str
    log_dir: Path
    groups: list[subprocess.Popen[bytes]]

    def status(self) -> dict[str, object]:
        with urllib.request.urlopen(f"{self.ui_url}/json/", timeout=5) as answer:
            status: dict[str, object] = json.load(answer)
            return status

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self.log_dir.glob("*.log"))
        )

    def alive_workers(self) -> int:
        for proc in self.groups:
            if proc.poll() is not None:
                raise AssertionError(f"a Spark daemon exited ({proc.returncode}):\n{self.logs()}")
        try:
            return int(str(self.status()["aliveworkers"]))
        except OSError:  # the master's UI is not up yet
            return 0

    def completed_apps(self) -> list[dict[str, object]]:
        apps = self.status()["completedapps"]
        assert isinstance(apps, list)
        return apps


def _spawn(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [str(SPARK_HOME / "bin" / "spark-class"), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # one group: stopping it stops the executors too
        )


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop each process group: TERM, then KILL what is left, then check none is left."""
    for proc in procs:
        _signal_group(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        # Executors and their Python workers may outlive the daemon by a moment.
        _signal_group(proc.pid, signal.SIGKILL)
    for pgid in (proc.pid for proc in procs):
        eventually(lambda: not _group_alive(pgid), what=f"process group {pgid} gone")  # noqa: B023


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@contextmanager
def standalone_spark(
    root: Path, *, cores: int = 2, memory: str = "1g"
) -> Iterator[StandaloneSpark]:
    """Start a master and one worker under ``root``, wait for the worker to register, yield
    the cluster, and stop both (and everything they started) however the block ends."""
    log_dir, work_dir = root / "logs", root / "work"
    log_dir.mkdir(parents=True)
    work_dir.mkdir()
    env = daemon_env(log_dir)
    port, ui_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{port}"
    procs: list[subprocess.Popen[bytes]] = []
    try:
        master = ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1"]
        master += ["--port", str(port), "--webui-port", str(ui_port)]
        procs.append(_spawn(master, env, log_dir / "master.log"))
        worker = ["org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1"]
        worker += ["--webui-port", str(free_port()), "--cores", str(cores)]
        worker += ["--memory", memory, "--work-dir", str(work_dir), master_url]
        procs.append(_spawn(worker, env, log_dir / "worker.log"))
        cluster = StandaloneSpark(master_url, f"http://127.0.0.1:{ui_port}", log_dir, procs)
        eventually(cluster.alive_workers, START_TIMEOUT_S, 0.2, what="a worker registered")
        yield cluster
    finally:
        _stop(procs)


def orbitmq_zip(path: Path) -> Path:
    """The OrbitMQ package as a zip for ``--py-files`` / ``spark.submit.pyFiles``: the
    ``orbitmq`` and ``pyspark_orbitmq`` packages' sources, as imported here."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in (orbitmq, pyspark_orbitmq):
            assert package.__file__ is not None
            root = Path(package.__file__).resolve().parent
            for file in sorted(root.rglob("*.py")):
                zf.write(file, file.relative_to(root.parent))
    return path


def bare_python(root: Path) -> Path:
    """A virtual environment whose Python finds this one's installed packages (pyspark,
    pyarrow, OrbitMQ's dependencies) but not OrbitMQ: a worker where OrbitMQ is not
    installed. Its ``.pth`` line adds this environment's site-packages as a plain directory,
    so the ``.pth`` files there (OrbitMQ's editable install among them) are not run."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    site_dirs = subprocess.run(
        [python, "-c", "import site; print(site.getsitepackages()[0])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    here = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    Path(site_dirs, "host-packages.pth").write_text("\n".join(here) + "\n")
    probe = "import importlib.util as u, pyspark, pyarrow; print(u.find_spec('orbitmq'))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    found = subprocess.run(
        [python, "-c", probe], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()
    assert found == "None", f"the bare Python finds OrbitMQ: {found}"
    return python
