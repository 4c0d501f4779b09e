"""A master store with its HAService and a slave store with its HAClient, on real sockets
and files, for the replication tests."""

from __future__ import annotations

import os
from pathlib import Path

from orbitmq.store import MessageStore
from orbitmq.store.ha import HAClient, HAService
from orbitmq.store.message_store_config import BrokerRole
from tests.conftest import StoreFactory
from tests.eventually import eventually

#: Short HA intervals, so that heartbeats and idle closes happen within a test.
HA_SETTINGS = {"ha_listen_port": 0, "ha_send_heartbeat_interval": 200}


def start_master(factory: StoreFactory, root: Path, **overrides: object) -> tuple[MessageStore, HAService]:
    store = factory(root, **{**HA_SETTINGS, **overrides})
    service = HAService(store, "127.0.0.1")
    service.start()
    store.on_append = service.wakeup
    return store, service


def start_slave(
    factory: StoreFactory, root: Path, master_port: int, **overrides: object
) -> tuple[MessageStore, HAClient]:
    store = factory(root, broker_role=BrokerRole.SLAVE, **{**HA_SETTINGS, **overrides})
    client = HAClient(store, f"127.0.0.1:{master_port}", reconnect_interval_s=0.05)
    client.start()
    return store, client


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
