"""Hot and cold reads (issue 20 §4): RocketMQ's accessMessageInMemoryMaxRatio rule and the
page cache (mincore) decide; a cold read's records are loaded with pread on a thread."""

from __future__ import annotations

import asyncio
import mmap
import os
import threading

import pytest

from orbitmq.broker import load_broker_config
from orbitmq.common.errors import ConfigError
from orbitmq.filter import TagMessageFilter, build_subscription_data
from orbitmq.store import ColdReader, GetMessageStatus, MessageStore, message_reader
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.message_store_config import MessageStoreConfig
from tests.component.store.records import parse_record
from tests.conftest import StoreFactory
from tests.eventually import eventually_async
from tests.support import make_message

BODY_BYTES = 1000
#: With a pretend RAM of 100 KiB, accessMessageInMemoryMaxRatio 40 lets 40 KiB count as in
#: memory: about the last 40 of the 100 messages put.
PRETEND_RAM_BYTES = 100 * 1024


def _put(store: MessageStore, count: int) -> None:
    for i in range(count):
        body = f"m{i}:".encode().ljust(BODY_BYTES, b".")
        assert store.put_message(make_message(body=body, tags="TagA")).is_ok
    assert store.wait_for_dispatch()


def _bodies(buffers: list[memoryview]) -> list[bytes]:
    return [parse_record(b).body[: parse_record(b).body.index(b":")] for b in buffers]


@pytest.fixture
def pretend_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_reader, "TOTAL_PHYSICAL_MEMORY", PRETEND_RAM_BYTES)


def test_rocketmqs_key_and_default(tmp_path: os.PathLike[str]) -> None:
    assert MessageStoreConfig().access_message_in_memory_max_ratio == 40
    assert MessageStoreConfig().cold_read_max_in_flight == 4
    conf = os.path.join(tmp_path, "broker.conf")
    with open(conf, "w") as out:
        out.write("accessMessageInMemoryMaxRatio=25\ncoldReadMaxInFlight=2\n")
    store = load_broker_config(conf, environ={}).store
    assert (store.access_message_in_memory_max_ratio, store.cold_read_max_in_flight) == (25, 2)
    with open(conf, "w") as out:
        out.write("coldReadMaxInFlight=-1\n")
    with pytest.raises(ConfigError, match="coldReadMaxInFlight: -1"):
        load_broker_config(conf, environ={})


@pytest.mark.usefixtures("pretend_ram")
def test_a_backlog_beyond_the_ratio_is_cold_with_on_disk_limits(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    _put(store, 100)
    got = store.get_message("g", "TopicTest", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    # maxTransferCountOnMessageInDisk (8) and ...BytesOnMessageInDisk (64 KiB) apply.
    assert got.message_count == 8
    assert got.suggest_pulling_from_slave
    assert got.cold_offsets is not None and len(got.cold_offsets) == 8
    head = store.get_message("g", "TopicTest", 0, 90, 32)
    assert head.message_count == 10
    assert head.cold_offsets is None
    assert not head.suggest_pulling_from_slave


def test_a_ratio_of_100_keeps_every_resident_read_hot(store_factory: StoreFactory) -> None:
    store = store_factory(access_message_in_memory_max_ratio=100)
    _put(store, 100)
    got = store.get_message("g", "TopicTest", 0, 0, 32)
    assert got.message_count == 32
    assert got.cold_offsets is None


def _drop_from_page_cache(mapped: MappedFile) -> None:
    mapped.buffer.flush()
    mapped.release_pages()
    with open(mapped.file_name, "rb") as file:
        os.fsync(file.fileno())
        os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


@pytest.mark.parametrize("tag", [None, "TagA"])  # the run path, and the per-message loop
def test_a_read_of_pages_not_in_the_page_cache_is_cold(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch, tag: str | None
) -> None:
    store = store_factory(access_message_in_memory_max_ratio=100)
    _put(store, 50)
    mapped = store.commit_log.mapped_file_queue.mapped_files[0]
    assert mapped.is_resident(0, 4096)
    _drop_from_page_cache(mapped)
    if mapped.is_resident(0, mmap.PAGESIZE):
        pytest.skip("this file system keeps the pages (tmpfs?)")
    message_filter = TagMessageFilter(build_subscription_data("TopicTest", tag or "*"))
    # Within RECENT_BYTES of the end, records are taken as cached without asking.
    assert store.get_message("g", "TopicTest", 0, 0, 4, message_filter).cold_offsets is None
    monkeypatch.setattr(message_reader, "RECENT_BYTES", 0)
    got = store.get_message("g", "TopicTest", 0, 0, 4, message_filter)
    assert got.message_count == 4
    assert got.cold_offsets is not None
    assert not got.suggest_pulling_from_slave  # the ratio still says in memory
    assert _bodies(got.message_buffers) == [b"m0", b"m1", b"m2", b"m3"]


@pytest.mark.usefixtures("pretend_ram")
async def test_the_cold_reader_loads_copies_on_a_thread(store_factory: StoreFactory) -> None:
    store = store_factory()
    _put(store, 100)
    got = store.get_message("g", "TopicTest", 0, 3, 32)
    assert got.cold_offsets is not None
    expected = [bytes(b) for b in got.message_buffers]
    threads: list[str] = []

    def read(mapped: MappedFile, position: int, size: int) -> bytes:
        threads.append(threading.current_thread().name)
        return mapped.read(position, size)

    reader = ColdReader(store.commit_log, 2, read)
    await reader.load(got)
    assert [bytes(b) for b in got.message_buffers] == expected
    assert _bodies(got.message_buffers) == [f"m{i}".encode() for i in range(3, 11)]
    assert got.cold_offsets is None
    assert threads == [threads[0]]  # one pread for the run of adjacent records
    assert threads[0] != threading.current_thread().name
    assert not any(isinstance(b.obj, mmap.mmap) for b in got.message_buffers)


@pytest.mark.usefixtures("pretend_ram")
async def test_cold_loads_wait_their_turn_beyond_the_bound(store_factory: StoreFactory) -> None:
    store = store_factory()
    _put(store, 100)
    release = threading.Event()
    running = 0
    most = 0
    lock = threading.Lock()

    def read(mapped: MappedFile, position: int, size: int) -> bytes:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        release.wait(10)
        with lock:
            running -= 1
        return mapped.read(position, size)

    reader = ColdReader(store.commit_log, 2, read)
    results = [store.get_message("g", "TopicTest", 0, offset, 8) for offset in (0, 8, 16, 24)]
    loads = [asyncio.ensure_future(reader.load(result)) for result in results]
    await eventually_async(lambda: running >= 2 or None, what="two loads running")
    assert not any(load.done() for load in loads)
    release.set()
    await asyncio.gather(*loads)
    assert most == 2
    assert [_bodies(r.message_buffers)[0] for r in results] == [b"m0", b"m8", b"m16", b"m24"]
