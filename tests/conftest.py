"""Fixtures shared by every test layer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orbitmq.common import OS_FILE_SYSTEM, FileSystem
from orbitmq.common.clock import Clock
from orbitmq.store import MessageStore
from tests.support import small_config

StoreFactory = Callable[..., MessageStore]


@pytest.fixture
def store_factory(tmp_path: Path) -> Iterator[StoreFactory]:
    """Build, load and start stores on ``tmp_path / "store"`` (or a given root); every store
    made here is shut down at the end of the test unless the test did so already."""
    made: list[MessageStore] = []

    def factory(
        root: Path | None = None,
        *,
        clock: Clock | None = None,
        fs: FileSystem = OS_FILE_SYSTEM,
        start: bool = True,
        **overrides: Any,
    ) -> MessageStore:
        config = small_config(root or tmp_path / "store", **overrides)
        kwargs: dict[str, Any] = {"fs": fs}
        if clock is not None:
            kwargs["clock"] = clock
        store = MessageStore(config, **kwargs)
        store.load()
        if start:
            store.start()
        made.append(store)
        return store

    yield factory
    for store in made:
        store.shutdown()
