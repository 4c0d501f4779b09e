"""``ConfigManager``: what the broker's topic and subscription group managers share (RocketMQ's
``ConfigManager`` base class, with the DataVersion both tables carry): a table of configs by
name, its DataVersion, and the JSON file that persists them."""

from __future__ import annotations

import logging
import os
import threading
from abc import ABC, abstractmethod
from typing import ClassVar, Generic, TypeVar

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.common import OS_FILE_SYSTEM, SYSTEM_CLOCK, Clock, ConfigFile, FileSystem
from orbitmq.protocol.body import Body, DataVersion

log = logging.getLogger(__name__)

V = TypeVar("V")


class ConfigManager(ABC, Generic[V]):
    """Owns a table (name -> config), its DataVersion and the file they are saved to.

    Safe from several threads: one reentrant lock guards the table, the version and the file,
    so subclasses change the table under ``_lock`` and then call ``_bump_and_persist``.
    Saving writes and fsyncs a file (a short block for asyncio callers).
    """

    #: What one entry is called in the log ("topic", "subscription group").
    KIND: ClassVar[str]

    def __init__(
        self,
        broker_config: BrokerConfig,
        config_path: str | os.PathLike[str],
        *,
        clock: Clock = SYSTEM_CLOCK,
        fs: FileSystem = OS_FILE_SYSTEM,
    ) -> None:
        """``config_path`` is ``MessageStoreConfig.config_file(<the subclass's name>)``."""
        self._broker_config = broker_config
        self._file = ConfigFile(config_path, fs)
        self._clock = clock
        self._lock = threading.RLock()
        self._table: dict[str, V] = {}
        self.data_version = DataVersion(timestamp=clock.now_ms())
        self._add_system_configs()

    @property
    def config_path(self) -> str:
        return str(self._file.path)

    @abstractmethod
    def _add_system_configs(self) -> None:
        """Put the entries RocketMQ's constructor creates into the fresh table."""

    @abstractmethod
    def _decode(self, content: bytes) -> tuple[dict[str, V], DataVersion]:
        """The table and its version from the file's content; raises when it does not parse."""

    @abstractmethod
    def _encode(self) -> Body:
        """The live table and version as the file's body (called under ``_lock``)."""

    def load(self) -> None:
        """Merge the file (or its .bak) over the table built in the constructor; its
        DataVersion wins. Raises ConfigError when a file exists but neither it nor its
        backup parses."""
        loaded = self._file.load_with(self._decode)
        if loaded is None:
            return
        table, version = loaded
        with self._lock:
            self._table.update(table)
            self.data_version = version
        log.info("loaded %d %ss from %s", len(table), self.KIND, self._file.path)

    def persist(self) -> None:
        """Save the table (pretty JSON, the previous file kept as .bak)."""
        with self._lock:
            self._file.save(self._encode().to_value())

    def replace_from_master(self, table: dict[str, V], version: DataVersion) -> bool:
        """A slave's copy of its master's table (RocketMQ's SlaveSynchronize): when
        ``version`` differs from ours, take the master's table and version whole and save
        them; True when it did."""
        with self._lock:
            if version == self.data_version:
                return False
            self._table.clear()
            self._table.update(table)
            self.data_version = DataVersion(version.timestamp, version.counter)
            self.persist()
        return True

    def _bump_and_persist(self) -> None:
        self.data_version.next_version(self._clock.now_ms())
        self.persist()

    def _names(self) -> set[str]:
        with self._lock:
            return set(self._table)

    def _remove(self, name: str) -> V | None:
        """Remove an entry and save; the removed config, or None when there was none."""
        with self._lock:
            old = self._table.pop(name, None)
            if old is None:
                log.warning("delete %s: %s does not exist", self.KIND, name)
                return None
            self._bump_and_persist()
        log.info("deleted %s %s", self.KIND, old)
        return old
