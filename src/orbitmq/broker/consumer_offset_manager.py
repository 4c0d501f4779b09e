"""Committed consumer offsets (RocketMQ's ``ConsumerOffsetManager``), persisted as
consumerOffset.json every flushConsumerOffsetInterval."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Final

from orbitmq.common import OS_FILE_SYSTEM, ConfigFile, FileSystem
from orbitmq.protocol.body import TOPIC_GROUP_SEPARATOR, ConsumerOffsetSerializeWrapper

log = logging.getLogger(__name__)

#: ``MessageStoreConfig.config_file(CONSUMER_OFFSET_CONFIG_NAME)``.
CONSUMER_OFFSET_CONFIG_NAME: Final = "consumerOffset"


def offset_key(topic: str, group: str) -> str:
    """``"topic@group"``, the offset table's key."""
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


def split_offset_key(key: str) -> tuple[str, str] | None:
    """(topic, group) from ``"topic@group"``; None for a key RocketMQ would skip too."""
    parts = key.split(TOPIC_GROUP_SEPARATOR)
    return (parts[0], parts[1]) if len(parts) == 2 else None


class ConsumerOffsetManager:
    """Owns the offset table ("topic@group" -> queue id -> next consume-queue offset to
    consume) and consumerOffset.json.

    Safe from several threads: one lock guards the table; :meth:`persist` copies the table
    under the lock and writes outside it, so commits never wait for the disk. Only one
    persist should run at a time (the broker's periodic task); a second lock ensures it.
    """

    def __init__(
        self, config_path: str | os.PathLike[str], *, fs: FileSystem = OS_FILE_SYSTEM
    ) -> None:
        """``config_path`` is ``MessageStoreConfig.config_file("consumerOffset")``."""
        self._file = ConfigFile(config_path, fs)
        self._lock = threading.Lock()
        self._save_lock = threading.Lock()
        self._table: dict[str, dict[int, int]] = {}
        # Changes since the last save; persist() skips the write when there are none.
        self._changes = 0
        #: Run by each save (in its thread): before the table is copied, and with what that
        #: returned once the file is written (POP notes the revive log's end there).
        self.before_snapshot: Callable[[], object] | None = None
        self.after_save: Callable[[object], None] | None = None

    @property
    def config_path(self) -> str:
        return str(self._file.path)

    # -- persistence ---------------------------------------------------------------------

    def load(self) -> None:
        """Replace the table with consumerOffset.json (or its .bak); standard JSON or
        fastjson's unquoted queue ids. Raises ConfigError when neither file parses."""
        wrapper = self._file.load_with(ConsumerOffsetSerializeWrapper.from_json)
        if wrapper is None:
            return
        with self._lock:
            self._table = wrapper.offset_table
            self._changes = 0
        log.info("loaded offsets of %d topic@group from %s", len(self._table), self._file.path)

    def persist(self) -> bool:
        """Save the table when it changed since the last save; True when it wrote.
        The broker calls this every flushConsumerOffsetInterval ms and at shutdown."""
        with self._save_lock:
            if self._changes == 0 and self._file.path.exists():
                return False
            token = self.before_snapshot() if self.before_snapshot is not None else None
            with self._lock:
                changes = self._changes
                snapshot = {key: dict(queues) for key, queues in self._table.items()}
            self._file.save(ConsumerOffsetSerializeWrapper(snapshot).to_value())
            with self._lock:
                self._changes -= changes
            if self.after_save is not None:
                self.after_save(token)
            return True

    # -- offsets -------------------------------------------------------------------------

    def commit_offset(
        self, client_host: str, group: str, topic: str, queue_id: int, offset: int
    ) -> None:
        key = offset_key(topic, group)
        with self._lock:
            queues = self._table.setdefault(key, {})
            previous = queues.get(queue_id)
            queues[queue_id] = offset
            self._changes += 1
        if previous is not None and offset < previous:
            log.warning(
                "consumer offset moved back: client=%s key=%s queue=%d offset=%d stored=%d",
                client_host,
                key,
                queue_id,
                offset,
                previous,
            )

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for the queue."""
        queues = self._table.get(offset_key(topic, group))
        if queues is None:
            return -1
        return queues.get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int] | None:
        """A copy of every committed offset of the group in the topic, by queue id."""
        with self._lock:
            queues = self._table.get(offset_key(topic, group))
            return None if queues is None else dict(queues)

    def offset_table(self) -> dict[str, dict[int, int]]:
        """A copy of the whole table."""
        with self._lock:
            return {key: dict(queues) for key, queues in self._table.items()}

    def merge_from_master(self, table: dict[str, dict[int, int]]) -> None:
        """A slave's copy of its master's offsets (RocketMQ's SlaveSynchronize: putAll, so
        a topic@group the master no longer has stays)."""
        with self._lock:
            for key, queues in table.items():
                self._table[key] = dict(queues)
            self._changes += 1

    def which_topic_by_consumer(self, group: str) -> set[str]:
        with self._lock:
            keys = list(self._table)
        return {pair[0] for key in keys if (pair := split_offset_key(key)) and pair[1] == group}

    def which_group_by_topic(self, topic: str) -> set[str]:
        with self._lock:
            keys = list(self._table)
        return {pair[1] for key in keys if (pair := split_offset_key(key)) and pair[0] == topic}

    def clone_offset(self, src_group: str, dest_group: str, topic: str) -> None:
        with self._lock:
            queues = self._table.get(offset_key(topic, src_group))
            if queues is not None:
                self._table[offset_key(topic, dest_group)] = dict(queues)
                self._changes += 1

    def remove_offset(self, group: str) -> None:
        """Forget every offset of ``group`` (its subscription group was deleted)."""
        self._remove(lambda topic, g: g == group)

    def clean_offset_by_topic(self, topic: str) -> None:
        """Forget every group's offsets in ``topic`` (the topic was deleted)."""
        self._remove(lambda t, group: t == topic)

    def clean_offsets_of_missing_topics(self, existing_topics: set[str]) -> None:
        """Forget offsets of topics no longer in the topic table."""
        self._remove(lambda topic, group: topic not in existing_topics)

    def _remove(self, doomed: Callable[[str, str], bool]) -> None:
        with self._lock:
            for key in list(self._table):
                pair = split_offset_key(key)
                if pair is not None and doomed(*pair):
                    del self._table[key]
                    self._changes += 1
                    log.warning("removed consumer offsets of %s", key)
