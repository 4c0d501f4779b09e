"""After ``orbitmq start`` is killed with SIGKILL and started again on the same data, every
message the official C++ client 2.1.0 was told was stored is still there: pulled, found by key,
by unique id and by offset id, and consumed by a new PushConsumer.

(RocketMQ 4.9.8 loses much of its key index in this situation; OrbitMQ's abnormal recovery
rebuilds the index from the commit log.)"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import check_read_back, expected_all, received
from tests.support import start_orbitmq

pytestmark = pytest.mark.timeout(600)

COUNT = 10


class Restartable:
    """``orbitmq start`` on one data directory, killed and started again on demand."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.runs = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.current = self.start()

    def start(self) -> OrbitMQ:
        self.runs += 1
        self.process, ready = start_orbitmq(self.tmp / "data", self.tmp / f"run-{self.runs}")
        return OrbitMQ(namesrv=ready[1], broker=ready[2], data_dir=self.tmp / "data")

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restartable]:
    servers = Restartable(tmp_path_factory.mktemp("orbitmq-restart"))
    try:
        yield servers
    finally:
        servers.stop()


def test_acknowledged_messages_survive_sigkill(
    restartable: Restartable, cpp_cvs: ClientRunner
) -> None:
    before = restartable.current
    sent: dict[str, list[dict[str, Any]]] = {
        mode: cpp_cvs.run(
            "cpp_producer.py", before.namesrv, f"CppKill{mode}Topic", f"kill-{mode}-pg", COUNT, mode
        )
        for mode in ("sync", "batch")
    }
    assert all(r["status"] == "OK" for results in sent.values() for r in results)

    restartable.kill()
    after = restartable.start()

    check_read_back(after, "CppKillsyncTopic", COUNT, sent["sync"])
    check_read_back(after, "CppKillbatchTopic", COUNT)
    lines = cpp_cvs.run(
        "cpp_push_consumer.py", after.namesrv, "CppKillsyncTopic", "kill-cg", COUNT, 30
    )
    assert sorted(received(r) for r in lines) == expected_all(COUNT)
    assert "abnormal recovery" in (restartable.tmp / "run-2.err").read_text()
