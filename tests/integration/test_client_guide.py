"""Every ``python`` block of docs/client-guide.md runs: each defines ``main(namesrv)``, which
is called against an in-process name server and broker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orbitmq.testing import InProcessCluster
from tests.support import REPO_ROOT

GUIDE = REPO_ROOT / "docs" / "client-guide.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)


def test_the_guide_has_examples() -> None:
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)))
async def test_example_runs(index: int, tmp_path: Path) -> None:
    namespace: dict[str, object] = {"__name__": f"client_guide_{index}"}
    exec(compile(BLOCKS[index], f"{GUIDE}:block{index}", "exec"), namespace)
    main = namespace["main"]
    async with InProcessCluster(tmp_path / "cluster") as cluster:
        await main(cluster.namesrv_addr)  # type: ignore[operator]
