"""Real RocketMQ clients, unchanged, against a real ``orbitmq start`` subprocess.

Each client package imports as ``rocketmq``, so each gets its own virtualenv under
``.venv-compat/<name>`` in the repository root, made once (from PyPI) and reused while its
requirement is unchanged. The client scripts in ``clients/`` run with that virtualenv's Python.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import REPO_ROOT, start_orbitmq

COMPAT_VENVS = REPO_ROOT / ".venv-compat"
CLIENTS_DIR = Path(__file__).resolve().parent / "clients"
#: rocketmq-python-cvs bundles the official C++ client 2.1.0 (librocketmq.so; needs only
#: libstdc++ and zlib from the system).
CPP_CVS_REQUIREMENT = "rocketmq-python-cvs==2.1.0.3"
#: rocketmq 0.4.4 bundles the older C++ client 1.x, which sends with SEND_MESSAGE (10). Its
#: Python API is the one ``clients/`` uses (it lacks only ``set_log_root_path``).
CPP_044_REQUIREMENT = "rocketmq==0.4.4"


def compat_venv(name: str, requirement: str) -> Path:
    """The Python of ``.venv-compat/<name>`` with ``requirement`` installed, made if needed.

    A stamp holding the requirement is written last: a half-made or outdated virtualenv is
    removed and made again."""
    root = COMPAT_VENVS / name
    python = root / "bin" / "python"
    stamp = root / ".installed"
    if stamp.is_file() and stamp.read_text() == requirement and python.exists():
        return python
    shutil.rmtree(root, ignore_errors=True)
    root.parent.mkdir(parents=True, exist_ok=True)
    steps = [
        [sys.executable, "-m", "venv", str(root)],
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", requirement],
        [str(python), "-c", "import rocketmq.client"],
    ]
    for step in steps:
        result = subprocess.run(step, capture_output=True, text=True, timeout=600, check=False)
        assert result.returncode == 0, f"{step}: {result.stdout}{result.stderr}"
    stamp.write_text(requirement)
    return python


@dataclass(frozen=True)
class ClientRunner:
    """Runs a script of ``clients/`` with one compat virtualenv's Python, bounded in time."""

    python: Path
    home: Path

    def run(self, script: str, *args: object, timeout_s: float = 60) -> list[dict[str, Any]]:
        """Run ``clients/<script>``; assert it exited 0; its stdout's JSON lines."""
        self.home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            # The C++ client writes its logs and snapshots under these, not in the repo or /.
            "ROCKETMQ_HOME": str(self.home),
            "ROCKETMQ_CLIENT_LOG_DIR": str(self.home / "logs"),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("PYTHONPATH", None)
        command = [str(self.python), str(CLIENTS_DIR / script), *map(str, args)]
        try:
            result = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=env,
                cwd=self.home,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{script} timed out: {exc.stdout!r} {exc.stderr!r}") from exc
        assert result.returncode == 0, (
            f"{script} exited {result.returncode}: {result.stdout}{result.stderr}{self.logs()}"
        )
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    def logs(self) -> str:
        """The tail of the client library's own logs, for failure messages."""
        tails = []
        for path in sorted((self.home / "logs").glob("*")):
            tails.append(f"\n--- {path.name}\n" + "\n".join(path.read_text().splitlines()[-40:]))
        return "".join(tails)


@dataclass(frozen=True)
class OrbitMQ:
    """A running ``orbitmq start`` subprocess."""

    namesrv: str
    broker: str
    data_dir: Path


@pytest.fixture(scope="session")
def cpp_cvs_python() -> Path:
    return compat_venv("cpp-cvs", CPP_CVS_REQUIREMENT)


@pytest.fixture(scope="session")
def cpp_044_python() -> Path:
    return compat_venv("cpp-0.4.4", CPP_044_REQUIREMENT)


@pytest.fixture(scope="module")
def orbitmq(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OrbitMQ]:
    """``orbitmq start`` on free ports for the module's tests; stopped with SIGTERM."""
    tmp = tmp_path_factory.mktemp("orbitmq")
    process, ready = start_orbitmq(tmp / "data", tmp / "orbitmq")
    try:
        yield OrbitMQ(namesrv=ready[1], broker=ready[2], data_dir=tmp / "data")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def cpp_cvs(cpp_cvs_python: Path, tmp_path_factory: pytest.TempPathFactory) -> ClientRunner:
    return ClientRunner(cpp_cvs_python, tmp_path_factory.mktemp("cpp-cvs-home"))


@pytest.fixture(scope="module")
def cpp_044(cpp_044_python: Path, tmp_path_factory: pytest.TempPathFactory) -> ClientRunner:
    return ClientRunner(cpp_044_python, tmp_path_factory.mktemp("cpp-044-home"))
