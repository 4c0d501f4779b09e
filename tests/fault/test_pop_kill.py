"""POP state across repeated kill -9 of a real ``orbitmq start``, with more messages:
nothing acked comes back, nothing unacked is lost, through three crashes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fault.pop_kill import run_pop_kill


@pytest.mark.fault
@pytest.mark.timeout(600)
def test_pop_survives_repeated_kill_9(tmp_path: Path) -> None:
    run_pop_kill(tmp_path, count=1500, pops=20, rounds=3)
