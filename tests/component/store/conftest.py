"""Fixtures of the store component tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.component.store.ha_pair import HAStores
from tests.conftest import StoreFactory


@pytest.fixture
def ha(store_factory: StoreFactory) -> Iterator[HAStores]:
    """Masters and slaves on real sockets; their HA threads stop before their stores."""
    stores = HAStores(store_factory)
    yield stores
    stores.stop_all()
