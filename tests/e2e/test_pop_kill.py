"""POP state survives kill -9 of a real ``orbitmq start`` (short run; tests/fault has the
long one): nothing acked comes back, nothing unacked is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fault.pop_kill import run_pop_kill


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_pop_survives_kill_9(tmp_path: Path) -> None:
    run_pop_kill(tmp_path, count=120, pops=4)
