"""A master store with its HAService and a slave store with its HAClient, on real sockets
and files, for the replication tests."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orbitmq.store import MessageStore
from orbitmq.store.ha import HAClient, HAService
from orbitmq.store.message_store_config import BrokerRole
from tests.conftest import StoreFactory
from tests.eventually import eventually

#: Short HA intervals, so that heartbeats and idle closes happen within a test.
HA_SETTINGS = {"ha_listen_port": 0, "ha_send_heartbeat_interval": 200}


class HAStores:
    """Makes masters (store + HAService) and slaves (store + HAClient) on tmp dirs and
    stops their HA threads at the end of the test, before the stores shut down."""

    def __init__(self, factory: StoreFactory) -> None:
        self._factory = factory
        self._stops: list[Callable[[], None]] = []

    def master(self, root: Path, **overrides: Any) -> tuple[MessageStore, HAService]:
        store = self._factory(root, **{**HA_SETTINGS, **overrides})
        return store, self.serve(store)

    def serve(self, store: MessageStore) -> HAService:
        service = HAService(store, "127.0.0.1")
        service.start()
        store.on_append = service.wakeup
        self._stops.append(service.shutdown)
        return service

    def slave(
        self, root: Path, master_port: int, **overrides: Any
    ) -> tuple[MessageStore, HAClient]:
        store = self._factory(root, broker_role=BrokerRole.SLAVE, **{**HA_SETTINGS, **overrides})
        return store, self.client(store, f"127.0.0.1:{master_port}")

    def client(self, store: MessageStore, address: str) -> HAClient:
        client = HAClient(store, address, reconnect_interval_s=0.05)
        client.start()
        self._stops.append(client.shutdown)
        return client

    def stop_all(self) -> None:
        for stop in reversed(self._stops):
            stop()


def wait_caught_up(master: MessageStore, slave: MessageStore, timeout_s: float = 20) -> None:
    eventually(
        lambda: slave.commit_log.max_offset == master.commit_log.max_offset,
        timeout_s,
        what=f"slave at master's offset {master.commit_log.max_offset}",
    )
    assert slave.wait_for_dispatch()


def commit_log_bytes(store: MessageStore, end: int) -> dict[str, bytes]:
    """Each commit log file's bytes below physical ``end``."""
    size = store.config.mapped_file_size_commit_log
    out = {}
    directory = store.config.commit_log_dir
    for name in sorted(os.listdir(directory)):
        start = int(name)
        if start < end:
            out[name] = Path(directory, name).read_bytes()[: min(size, end - start)]
    return out
