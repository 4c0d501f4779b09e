"""Real RocketMQ clients, unchanged, against a real ``orbitmq start`` subprocess.

Each client package gets its own virtualenv under ``.venv-compat/<name>`` (see
``client_venv.py``). The client scripts in ``clients/`` run with that virtualenv's Python.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.compat.client_venv import (
    CPP_044_REQUIREMENT,
    CPP_CVS_REQUIREMENT,
    PYTHON_5X_IMPORT_CHECK,
    PYTHON_5X_REQUIREMENT,
    compat_venv,
)
from tests.support import SMALL_STORE_CONF, start_orbitmq

CLIENTS_DIR = Path(__file__).resolve().parent / "clients"


@dataclass(frozen=True)
class ClientRunner:
    """Runs a script of ``clients/`` with one compat virtualenv's Python, bounded in time."""

    python: Path
    home: Path

    def run(self, script: str, *args: object, timeout_s: float = 60) -> list[dict[str, Any]]:
        """Run ``clients/<script>``; assert it exited 0; its stdout's JSON lines."""
        try:
            result = subprocess.run(
                self.command(script, args),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                env=self.env(),
                cwd=self.home,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{script} timed out: {exc.stdout!r} {exc.stderr!r}") from exc
        assert result.returncode == 0, (
            f"{script} exited {result.returncode}: {result.stdout}{result.stderr}{self.logs()}"
        )
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    @contextmanager
    def start(self, script: str, *args: object) -> Iterator[RunningClient]:
        """Run ``clients/<script>`` in the background for the ``with`` block; killed after."""
        process = subprocess.Popen(
            self.command(script, args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env(),
            cwd=self.home,
        )
        running = RunningClient(script, process)
        try:
            yield running
        finally:
            running.stop()

    def command(self, script: str, args: tuple[object, ...]) -> list[str]:
        return [str(self.python), str(CLIENTS_DIR / script), *map(str, args)]

    def env(self) -> dict[str, str]:
        self.home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            # The C++ client writes its logs and snapshots under these, not in the repo or /.
            "ROCKETMQ_HOME": str(self.home),
            "ROCKETMQ_CLIENT_LOG_DIR": str(self.home / "logs"),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("PYTHONPATH", None)
        return env

    def logs(self) -> str:
        """The tail of the client library's own logs, for failure messages."""
        tails = []
        for path in sorted((self.home / "logs").glob("*")):
            tails.append(f"\n--- {path.name}\n" + "\n".join(path.read_text().splitlines()[-40:]))
        return "".join(tails)


class RunningClient:
    """A client script running in the background: its stdout's JSON lines as they arrive."""

    def __init__(self, script: str, process: subprocess.Popen[str]) -> None:
        self.script = script
        self.process = process
        self._lines: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for text in self.process.stdout:
            if text.startswith("{"):
                with self._changed:
                    self._lines.append(json.loads(text))
                    self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def lines(self) -> list[dict[str, Any]]:
        with self._changed:
            return list(self._lines)

    def wait_for(
        self, done: Callable[[list[dict[str, Any]]], bool], timeout_s: float
    ) -> list[dict[str, Any]]:
        """The lines so far once ``done(lines)`` holds; AssertionError after ``timeout_s`` or
        if the script exits first."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not done(self._lines):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not self._reader.is_alive():
                    raise AssertionError(
                        f"{self.script}: not done after {timeout_s} s "
                        f"(exit {self.process.poll()}): {self._lines[-5:]}"
                    )
                self._changed.wait(min(remaining, 0.5))
            return list(self._lines)

    def stop(self) -> None:
        """Kill the script (the client library cannot shut down cleanly) and reap it."""
        self.process.kill()
        self.process.wait()
        self._reader.join(timeout=5)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@dataclass(frozen=True)
class OrbitMQ:
    """A running ``orbitmq start`` subprocess."""

    namesrv: str
    broker: str
    data_dir: Path
    #: The gRPC endpoint (host:port), "" when it is off.
    grpc: str = ""


@pytest.fixture(scope="session")
def cpp_cvs_python() -> Path:
    return compat_venv("cpp-cvs", CPP_CVS_REQUIREMENT)


@pytest.fixture(scope="session")
def cpp_044_python() -> Path:
    return compat_venv("cpp-0.4.4", CPP_044_REQUIREMENT)


@pytest.fixture(scope="session")
def python_5x_python() -> Path:
    return compat_venv("python-5x", PYTHON_5X_REQUIREMENT, PYTHON_5X_IMPORT_CHECK)


@pytest.fixture(scope="module")
def broker_conf() -> str | None:
    """broker.conf lines for the module's ``orbitmq start -c``; a module overrides it."""
    return None


@pytest.fixture(scope="module")
def orbitmq(tmp_path_factory: pytest.TempPathFactory, broker_conf: str | None) -> Iterator[OrbitMQ]:
    """``orbitmq start`` on free ports for the module's tests; stopped with SIGTERM."""
    tmp = tmp_path_factory.mktemp("orbitmq")
    config = tmp / "broker.conf"
    config.write_text(SMALL_STORE_CONF + (broker_conf or ""))
    process, ready = start_orbitmq(tmp / "data", tmp / "orbitmq", config)
    try:
        grpc = ready[7] if ready[7] and not ready[7].startswith("off") else ""
        yield OrbitMQ(namesrv=ready[1], broker=ready[2], data_dir=tmp / "data", grpc=grpc)
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
def python_5x(python_5x_python: Path, tmp_path_factory: pytest.TempPathFactory) -> ClientRunner:
    return ClientRunner(python_5x_python, tmp_path_factory.mktemp("python-5x-home"))


@pytest.fixture(scope="module")
def cpp_044(cpp_044_python: Path, tmp_path_factory: pytest.TempPathFactory) -> ClientRunner:
    return ClientRunner(cpp_044_python, tmp_path_factory.mktemp("cpp-044-home"))
