"""A broker writes into its data directory only while it holds the directory's lock: the
consumer offsets saved at stop go in before the store gives the lock back."""

from __future__ import annotations

import os

from orbitmq.store import store_holder_pid
from tests.component.broker.conftest import BrokerFactory


async def test_offsets_are_saved_at_stop_while_the_lock_is_held(
    broker_factory: BrokerFactory,
) -> None:
    broker = await broker_factory()
    root = broker.store_config.store_path_root_dir
    holders: list[int | None] = []
    persist = broker.consumer_offset_manager.persist

    def persist_and_look() -> bool:
        holders.append(store_holder_pid(root))
        return persist()

    broker.consumer_offset_manager.persist = persist_and_look  # type: ignore[method-assign]
    await broker.stop()
    assert holders == [os.getpid()]
    assert store_holder_pid(root) is None
