"""A server process tunes the garbage collector once its servers are up."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from orbitmq.cli import servers


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_servers_freeze_start_up_objects_and_collect_young_ones_less_often() -> None:
    gc.unfreeze()
    _, threshold1, threshold2 = gc.get_threshold()
    assert gc.get_freeze_count() == 0

    servers._tune_gc()

    assert gc.get_freeze_count() > 0  # what start-up made is out of the collector's reach
    assert gc.get_threshold() == (servers.SERVER_GC_THRESHOLD0, threshold1, threshold2)
