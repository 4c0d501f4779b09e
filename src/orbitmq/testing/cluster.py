"""``InProcessCluster``: a name server and brokers on free ports in this process, for tests
(ours and users'). ``async with InProcessCluster(tmp_path) as cluster:`` then point clients at
``cluster.namesrv_addr``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import AsyncLifetime
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.namesrv import NamesrvConfig, NamesrvController
from orbitmq.remoting import TlsSystemConfig
from orbitmq.store import BrokerRole, MessageStoreConfig


class InProcessCluster(AsyncLifetime):
    """Owns one name server and ``brokers`` brokers (``broker-a``, ``broker-b``, ...), each
    with its own store under ``root``; everything listens on 127.0.0.1, any free port.

    ``broker_settings`` and ``store_settings`` set BrokerConfig and MessageStoreConfig
    attributes of every broker (e.g. ``flush_disk_type``), ``namesrv_settings`` NamesrvConfig
    attributes (e.g. ``order_message_enable``); ``fs`` is the file system every
    broker's store writes through (a ``FaultInjectingFileSystem`` to slow or fail it).
    ``slaves`` slaves join each broker group (brokerId 1, 2, ..., brokerRole SLAVE, stores
    under ``root/<name>-s<id>``); ``start_slave`` adds one later; ``messages_pulled`` says
    which of them served a group's pulls; ``stop_serving`` makes a broker unreachable to
    clients while it stays registered. ``tls`` gives every server its tls.* settings (and,
    with tls.enable, the brokers' own connections). Stores default to 16 MiB commit log
    files and 4 MB index files so tests stay light on disk."""

    def __init__(
        self,
        root: Path | str,
        *,
        brokers: int = 1,
        slaves: int = 0,
        broker_settings: dict[str, Any] | None = None,
        store_settings: dict[str, Any] | None = None,
        namesrv_settings: dict[str, Any] | None = None,
        fs: FileSystem = OS_FILE_SYSTEM,
        tls: TlsSystemConfig | None = None,
    ) -> None:
        self.root = Path(root)
        # Every server's tls.* settings (None: plain only); brokers connect as it says too.
        self.tls = tls
        self.broker_count = brokers
        self.slave_count = slaves
        self.broker_settings = broker_settings or {}
        self.store_settings = store_settings or {}
        self.fs = fs
        # The KV table (order topic configs among others) under ``root``, not the user's home.
        namesrv_config = NamesrvConfig(
            listen_port=0,
            bind_address="127.0.0.1",
            kv_config_path=str(self.root / "namesrv" / "kvConfig.json"),
            config_store_path=str(self.root / "namesrv" / "namesrv.properties"),
        )
        for key, value in (namesrv_settings or {}).items():
            setattr(namesrv_config, key, value)
        self.namesrv = NamesrvController(namesrv_config, tls=tls)
        self.brokers: list[BrokerController] = []

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.address

    async def start(self) -> None:
        await self.namesrv.start()
        try:
            for i in range(self.broker_count):
                name = f"broker-{chr(ord('a') + i)}"
                await self.start_broker(name)
                for broker_id in range(1, self.slave_count + 1):
                    await self.start_slave(name, broker_id)
        except BaseException:
            await self.stop()
            raise

    async def start_slave(self, name: str, broker_id: int = 1) -> BrokerController:
        """Start a slave of broker group ``name`` (or start again one that was stopped). It
        registers with ``broker_id``, copies its master's commit log over the HA connection
        and its metadata as a RocketMQ slave does."""
        if broker_id < 1:
            raise ValueError(f"broker_id: {broker_id} is not a slave's id (>= 1)")
        return await self.start_broker(
            name,
            broker_id=broker_id,
            broker_role=BrokerRole.SLAVE,
            store_dir=f"{name}-s{broker_id}",
        )

    def slaves_of(self, name: str) -> list[BrokerController]:
        """The running slaves of broker group ``name``."""
        return [
            b
            for b in self.brokers
            if b.broker_config.broker_name == name and b.broker_config.broker_id
        ]

    def messages_pulled(self, group: str, topic: str) -> dict[tuple[str, int], int]:
        """Which running brokers served ``group``'s pulls of ``topic``: (broker name, broker
        id) -> messages their pulls handed out since each started (its GROUP_GET_NUMS
        total), brokers that served none left out. Id 0 is a master, so
        ``{("broker-a", 1): 5}`` says the slave served them. Reads plain integers the
        brokers' loop writes: safe from any thread."""
        served = {}
        for broker in list(self.brokers):
            traffic = broker.broker_stats_manager.group_get.get((topic, group))
            if traffic is not None and traffic.nums:
                config = broker.broker_config
                served[(config.broker_name, config.broker_id)] = traffic.nums
        return served

    async def start_broker(
        self,
        name: str,
        *,
        broker_id: int = 0,
        broker_role: BrokerRole | None = None,
        store_dir: str | None = None,
    ) -> BrokerController:
        """Start one more broker (or start again one that was stopped, on its data)."""
        config = BrokerConfig(
            broker_name=name,
            broker_id=broker_id,
            bind_address="127.0.0.1",
            listen_port=0,
            namesrv_addr=self.namesrv_addr,
        )
        for key, value in self.broker_settings.items():
            setattr(config, key, value)
        store = MessageStoreConfig(
            store_path_root_dir=str(self.root / (store_dir or name)),
            mapped_file_size_commit_log=16 * 1024 * 1024,
            # RocketMQ's index file (5M slots, 20M entries) is 420 MB preallocated: far too
            # much disk for each test broker. 4 MB keeps every index path exercised.
            max_hash_slot_num=50_000,
            max_index_num=200_000,
        )
        for key, value in self.store_settings.items():
            setattr(store, key, value)
        if broker_role is not None:
            store.broker_role = broker_role
        controller = BrokerController(config, store, fs=self.fs, tls=self.tls)
        await controller.start()
        self.brokers.append(controller)
        return controller

    async def stop_serving(self, controller: BrokerController) -> None:
        """Close the broker's server and its clients' connections, and nothing else: clients
        find it unreachable (connection refused) while the name server still lists it, as
        when a network partition cuts a broker off from its clients or its host is gone
        without closing its connections. ``stop_broker`` stops the rest."""
        await controller.remoting_server.stop()

    async def stop_broker(self, controller: BrokerController) -> None:
        self.brokers.remove(controller)
        await controller.stop()

    async def stop(self) -> None:
        for controller in list(self.brokers):
            await self.stop_broker(controller)
        await self.namesrv.stop()

    async def _stop(self) -> None:
        await self.stop()
