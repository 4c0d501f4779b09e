"""Consumer progress: where each queue's consumption stands, kept in memory and persisted.

Two stores behind one role, as RocketMQ's client:

- :class:`RemoteBrokerOffsetStore` for clustering (R21): the broker owns the truth; the client
  commits to it (every 5 s, driven by its owner) and reads it when it starts on a queue.
- :class:`LocalFileOffsetStore` for broadcasting (R22): every client owns its own progress in
  ``<store_dir>/<client_id>/<group>/offsets.json``, RocketMQ's layout and JSON.

Offsets are consume-queue offsets: the offset of the next message to consume.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Protocol

from orbitmq.common import ConfigFile, MessageQueue, OrbitError
from orbitmq.protocol.body import Body

log = logging.getLogger(__name__)

#: Where broadcasting consumers keep their offsets unless told otherwise: RocketMQ's default
#: for ``rocketmq.client.localOffsetStoreDir``.
DEFAULT_LOCAL_OFFSET_STORE_DIR: Final = Path("~") / ".rocketmq_offsets"
#: The file name under ``<store_dir>/<client_id>/<group>/``.
LOCAL_OFFSET_FILE_NAME: Final = "offsets.json"

#: ``read_offset`` answers: no offset known (start per consumeFromWhere) ...
OFFSET_NOT_FOUND: Final = -1
#: ... and the store could not be read (the caller retries later).
OFFSET_READ_FAILED: Final = -2


class ReadOffsetType(enum.Enum):
    """Where ``read_offset`` looks."""

    READ_FROM_MEMORY = enum.auto()
    READ_FROM_STORE = enum.auto()
    MEMORY_FIRST_THEN_STORE = enum.auto()


class OffsetNotFoundError(OrbitError):
    """The broker has no committed offset for the group on that queue (QUERY_NOT_FOUND)."""


class OffsetStore(Protocol):
    """The role of a consumer group's offset store. Methods that may reach the broker or the
    disk are coroutines; the in-memory ones are plain and safe from any thread."""

    def load(self) -> None:
        """Read persisted offsets into memory (local store); nothing for the remote one."""
        ...

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        """Record ``offset`` in memory; with ``increase_only`` a lower one is ignored."""
        ...

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        """The offset of ``mq``; -1 when none is known, -2 when the store failed."""
        ...

    async def persist_all(self, mqs: Collection[MessageQueue]) -> None:
        """Persist the offsets of ``mqs``."""
        ...

    async def persist(self, mq: MessageQueue) -> None:
        """Persist the offset of one queue."""
        ...

    def remove_offset(self, mq: MessageQueue) -> None:
        """Forget a queue's offset in memory (the queue went to another consumer)."""
        ...

    def clone_offset_table(self, topic: str) -> dict[MessageQueue, int]:
        """A copy of the in-memory offsets of ``topic``'s queues (every queue when blank)."""
        ...

    async def update_consume_offset_to_broker(
        self, mq: MessageQueue, offset: int, is_oneway: bool
    ) -> None:
        """Commit ``offset`` to the broker now (remote store); nothing for the local one."""
        ...


class _OffsetTable:
    """The in-memory queue -> offset map both stores keep. Thread-safe: consume threads
    update it while the event loop persists it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offsets: dict[MessageQueue, int] = {}

    def update(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        with self._lock:
            current = self._offsets.get(mq)
            # A first offset is taken as it is, even with increase_only (RocketMQ's
            # putIfAbsent before compareAndIncreaseOnly).
            if current is None or not increase_only or offset > current:
                self._offsets[mq] = offset

    def get(self, mq: MessageQueue) -> int | None:
        with self._lock:
            return self._offsets.get(mq)

    def remove(self, mq: MessageQueue) -> None:
        with self._lock:
            self._offsets.pop(mq, None)

    def snapshot(self, topic: str = "") -> dict[MessageQueue, int]:
        with self._lock:
            if not topic.strip():
                return dict(self._offsets)
            return {mq: offset for mq, offset in self._offsets.items() if mq.topic == topic}

    def __len__(self) -> int:
        with self._lock:
            return len(self._offsets)


@dataclass(slots=True)
class OffsetSerializeWrapper(Body):
    """``offsets.json``: RocketMQ's OffsetSerializeWrapper. fastjson writes each MessageQueue
    key as a bare object; we read that and write the key as a string holding its JSON, which
    fastjson reads back (see ``orbitmq.protocol.body.json_text``)."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


def local_offset_store_path(store_dir: str | os.PathLike[str], client_id: str, group: str) -> Path:
    """``<store_dir>/<client_id>/<group>/offsets.json``, as RocketMQ lays it out. The client id
    (``ip@instanceName``) is used as it is: RocketMQ does not escape it either."""
    return Path(store_dir).expanduser() / client_id / group / LOCAL_OFFSET_FILE_NAME


class _MemoryOffsetStore:
    """What both stores share: one group's in-memory offset table, and reads that consult it
    before the store proper (``_read_stored``). ``update_offset``, ``remove_offset`` and
    ``clone_offset_table`` are safe from any thread."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._table = _OffsetTable()

    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        self._table.update(mq, offset, increase_only)

    async def read_offset(self, mq: MessageQueue, read_type: ReadOffsetType) -> int:
        """From memory and/or the store; a stored value replaces the memory value. -1 when
        unknown, -2 when the store could not be asked (the caller retries later)."""
        if read_type is not ReadOffsetType.READ_FROM_STORE:
            offset = self._table.get(mq)
            if offset is not None:
                return offset
            if read_type is ReadOffsetType.READ_FROM_MEMORY:
                return OFFSET_NOT_FOUND
        stored = await self._read_stored(mq)
        if stored >= 0:
            self._table.update(mq, stored, increase_only=False)
        return stored

    async def _read_stored(self, mq: MessageQueue) -> int:
        raise NotImplementedError

    def remove_offset(self, mq: MessageQueue) -> None:
        self._table.remove(mq)
        log.info(
            "remove unnecessary messageQueue offset. group=%s, mq=%s, offsetTableSize=%d",
            self.group,
            mq,
            len(self._table),
        )

    def clone_offset_table(self, topic: str) -> dict[MessageQueue, int]:
        return self._table.snapshot(topic)


class LocalFileOffsetStore(_MemoryOffsetStore):
    """A broadcasting consumer's offsets (R22): owns the in-memory table of one group on this
    client and the ``offsets.json`` (with its ``.bak``) they persist to.

    ``update_offset``, ``remove_offset`` and ``clone_offset_table`` are safe from any thread;
    file reads and writes run on a worker thread and are serialized by a lock.
    """

    def __init__(
        self,
        client_id: str,
        group: str,
        store_dir: str | os.PathLike[str] = DEFAULT_LOCAL_OFFSET_STORE_DIR,
    ) -> None:
        super().__init__(group)
        self.path = local_offset_store_path(store_dir, client_id, group)
        self._file = ConfigFile(self.path)
        # One read-merge-write at a time: two persists must not interleave their merges.
        self._file_lock = threading.Lock()

    def load(self) -> None:
        """Read ``offsets.json`` (or its ``.bak``) into memory.

        Raises ConfigError when a file exists but neither it nor its backup parses.
        """
        wrapper = self._read_file()
        if wrapper is None:
            return
        for mq, offset in wrapper.offset_table.items():
            self._table.update(mq, offset, increase_only=False)
            log.info("load consumer's offset, %s %s %d", self.group, mq, offset)

    async def _read_stored(self, mq: MessageQueue) -> int:
        """From the file; -1 when it has none or cannot be read (RocketMQ's local store never
        answers -2)."""
        try:
            wrapper = await asyncio.to_thread(self._read_file)
        except OrbitError as exc:
            log.warning("cannot read local offsets %s: %s", self.path, exc)
            return OFFSET_NOT_FOUND
        stored = None if wrapper is None else wrapper.offset_table.get(mq)
        return OFFSET_NOT_FOUND if stored is None else stored

    async def persist_all(self, mqs: Collection[MessageQueue]) -> None:
        """Write the offsets of ``mqs`` into the file, keeping what it holds for other queues
        (RocketMQ merges into the file and leaves the memory table alone)."""
        if not mqs:
            return
        wanted = set(mqs)
        offsets = {mq: o for mq, o in self._table.snapshot().items() if mq in wanted}
        await asyncio.to_thread(self._merge_into_file, offsets)

    async def persist(self, mq: MessageQueue) -> None:
        offset = self._table.get(mq)
        if offset is not None:
            await asyncio.to_thread(self._merge_into_file, {mq: offset})

    async def update_consume_offset_to_broker(
        self, mq: MessageQueue, offset: int, is_oneway: bool
    ) -> None:
        """Nothing: broadcasting progress never goes to the broker."""

    def _read_file(self) -> OffsetSerializeWrapper | None:
        with self._file_lock:
            return self._file.load_with(OffsetSerializeWrapper.from_json)

    def _merge_into_file(self, offsets: dict[MessageQueue, int]) -> None:
        with self._file_lock:
            try:
                wrapper = self._file.load_with(OffsetSerializeWrapper.from_json)
            except OrbitError as exc:
                # Writing now would replace offsets we could not read with a partial table.
                log.error("cannot read local offsets %s, not persisting: %s", self.path, exc)
                return
            if wrapper is None:
                wrapper = OffsetSerializeWrapper()
            wrapper.offset_table.update(offsets)
            try:
                self._file.save(wrapper.to_value())
            except OSError as exc:
                log.error("persist consumer offset failed, %s: %s", self.path, exc)


class BrokerOffsetBackend(Protocol):
    """What :class:`RemoteBrokerOffsetStore` needs from the network: the broker's
    QUERY_CONSUMER_OFFSET and UPDATE_CONSUMER_OFFSET for a queue, found by its broker name."""

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        """The group's committed offset on ``mq``; raises :class:`OffsetNotFoundError` when
        the broker has none, anything else when the broker cannot be asked or refuses."""
        ...

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> None:
        """Commit ``offset`` for the group on ``mq``; ``oneway`` sends without awaiting an
        answer."""
        ...


class RemoteBrokerOffsetStore(_MemoryOffsetStore):
    """A clustering consumer's offsets (R21): owns the in-memory table of one group on this
    client; the broker holds the committed copy, reached through an injected backend.

    ``update_offset``, ``remove_offset`` and ``clone_offset_table`` are safe from any thread;
    the coroutines run on the consumer's event loop.
    """

    def __init__(self, group: str, backend: BrokerOffsetBackend) -> None:
        super().__init__(group)
        self._backend = backend

    def load(self) -> None:
        """Nothing to load: offsets are read from the broker queue by queue."""

    async def _read_stored(self, mq: MessageQueue) -> int:
        """From the broker: -1 when it has none, -2 when it could not be asked."""
        try:
            return await self._backend.query_consumer_offset(self.group, mq)
        except OffsetNotFoundError:
            return OFFSET_NOT_FOUND
        except Exception as exc:  # any failure: the caller must not guess a start offset
            log.warning("fetchConsumeOffsetFromBroker exception, %s: %s", mq, exc)
            return OFFSET_READ_FAILED

    async def persist_all(self, mqs: Collection[MessageQueue]) -> None:
        """Commit the offsets of ``mqs`` (oneway, as RocketMQ's periodic commit) and forget
        those of queues not in ``mqs``: they were rebalanced away. An empty ``mqs`` does
        nothing at all, so a consumer between assignments keeps its table."""
        if not mqs:
            return
        wanted = set(mqs)
        unused = []
        for mq, offset in self._table.snapshot().items():
            if mq in wanted:
                await self._commit_logged(mq, offset, "persistAll")
            else:
                unused.append(mq)
        for mq in unused:
            self._table.remove(mq)
            log.info("remove unused mq, %s, %s", mq, self.group)

    async def persist(self, mq: MessageQueue) -> None:
        """Commit one queue's offset (oneway); failures are logged, the next persist retries."""
        offset = self._table.get(mq)
        if offset is not None:
            await self._commit_logged(mq, offset, "persist")

    async def update_consume_offset_to_broker(
        self, mq: MessageQueue, offset: int, is_oneway: bool
    ) -> None:
        """Commit ``offset`` now; failures raise to the caller."""
        await self._backend.update_consumer_offset(self.group, mq, offset, is_oneway)

    async def _commit_logged(self, mq: MessageQueue, offset: int, what: str) -> None:
        try:
            await self._backend.update_consumer_offset(self.group, mq, offset, True)
        except Exception as exc:  # one queue's failure must not stop the others' commits
            log.error("[%s] updateConsumeOffsetToBroker exception, %s: %s", what, mq, exc)
        else:
            log.debug("[%s] group %s committed %s %d", what, self.group, mq, offset)
