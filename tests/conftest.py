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

TESTS_DIR = Path(__file__).resolve().parent
#: Layers marked by directory, so that no test in them can forget its marker.
DIRECTORY_MARKERS = ("compat", "spark", "browser")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.path.is_relative_to(TESTS_DIR):  # a session may collect more than tests/
            continue
        layer = item.path.relative_to(TESTS_DIR).parts[0]
        if layer in DIRECTORY_MARKERS:
            item.add_marker(layer)


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
