"""Flushing: ASYNC_FLUSH in the background, SYNC_FLUSH with group commit and its timeout, and
an event loop that keeps running while a sync is slow."""

from __future__ import annotations

import asyncio
import os
import struct
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

from orbitmq.store import FlushDiskType, GetMessageStatus, MessageStore, PutMessageStatus
from orbitmq.testing import FaultInjectingFileSystem, ManualClock
from tests.conftest import StoreFactory
from tests.support import make_message

T0 = 1_700_000_000_000


class RecordingFileSystem(FaultInjectingFileSystem):
    """Remembers which files were synced, and signals when a commit log sync has begun."""

    def __init__(self) -> None:
        super().__init__()
        self.commit_log_dir = ""
        self.synced: list[str] = []
        self.commit_log_sync_entered = threading.Event()
        self._paths_lock = threading.Lock()

    def sync(self, fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if self.commit_log_dir and path.startswith(self.commit_log_dir):
            self.commit_log_sync_entered.set()
        super().sync(fd)
        with self._paths_lock:
            self.synced.append(path)

    def commit_log_syncs(self) -> int:
        with self._paths_lock:
            return sum(1 for p in self.synced if p.startswith(self.commit_log_dir))


def _store(
    store_factory: StoreFactory, fs: RecordingFileSystem, **overrides: object
) -> MessageStore:
    store = store_factory(fs=fs, **overrides)
    fs.commit_log_dir = os.path.realpath(store.config.commit_log_dir) + os.sep
    return store


def _poll(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Bounded poll, for state that announces itself with no event."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def _checkpoint_physic_timestamp(store: MessageStore) -> int:
    with open(store.config.checkpoint_file, "rb") as handle:
        return int(struct.unpack(">q", handle.read(8))[0])


def test_async_flush_syncs_in_the_background_and_moves_the_checkpoint(
    store_factory: StoreFactory,
) -> None:
    fs = RecordingFileSystem()
    clock = ManualClock(T0)
    # The checkpoint file is rewritten on thorough logic flushes only (as RocketMQ does):
    # make every one thorough.
    # Every put wakes the flusher, so a flush may come between two puts and leave fewer than
    # flushCommitLogLeastPages dirty pages behind it: the thorough flush (every 1 s here
    # instead of 10, by the store's clock) takes those.
    store = _store(
        store_factory,
        fs,
        clock=clock,
        flush_consume_queue_thorough_interval=0,
        flush_commit_log_thorough_interval=1000,
    )
    assert store.config.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    queue = store.commit_log.mapped_file_queue
    for i in range(6):  # 6 x ~4.6 KB: more than flushCommitLogLeastPages (4) dirty pages
        clock.set(T0 + i)
        result = store.put_message(make_message(body=bytes([i]) * 4500))
        assert result.status is PutMessageStatus.PUT_OK
    clock.advance(1000)  # the thorough flush is due
    end = store.max_phy_offset
    assert _poll(lambda: queue.flushed_where >= end), "the commit log was never flushed"
    assert fs.commit_log_syncs() >= 1
    assert _poll(lambda: store.checkpoint.physic_msg_timestamp == T0 + 5)
    assert _poll(lambda: _checkpoint_physic_timestamp(store) == T0 + 5)


def test_sync_flush_put_returns_only_after_a_sync_covering_it(
    store_factory: StoreFactory,
) -> None:
    fs = RecordingFileSystem()
    store = _store(store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    fs.hold_syncs()
    try:
        with ThreadPoolExecutor(1) as pool:
            future = pool.submit(store.put_message, make_message(body=b"durable"))
            assert fs.commit_log_sync_entered.wait(10)
            done, _ = wait([future], timeout=0.2)
            assert not done, "put_message answered before its sync finished"
            assert fs.commit_log_syncs() == 0
            fs.release_syncs()
            result = future.result(10)
    finally:
        fs.release_syncs()
    assert result.status is PutMessageStatus.PUT_OK
    assert result.append_result is not None
    assert fs.commit_log_syncs() >= 1
    end = result.append_result.wrote_offset + result.append_result.wrote_bytes
    assert store.commit_log.mapped_file_queue.flushed_where >= end


async def test_group_commit_answers_many_puts_with_few_syncs(store_factory: StoreFactory) -> None:
    fs = RecordingFileSystem()
    store = _store(store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    loop = asyncio.get_running_loop()
    count = 60
    fs.hold_syncs()
    try:
        first = asyncio.create_task(store.async_put_message(make_message(body=b"first")))
        assert await loop.run_in_executor(None, fs.commit_log_sync_entered.wait, 10)
        tasks = [
            asyncio.create_task(store.async_put_message(make_message(body=f"m{i}".encode())))
            for i in range(count)
        ]
        # Every put appends before waiting for its sync; let them all get that far.
        await asyncio.sleep(0)
        deadline = loop.time() + 10
        while store.commit_log.topic_queue_table.get("TopicTest-0", 0) < count + 1:
            assert loop.time() < deadline
            await asyncio.sleep(0.001)
        assert not first.done()
        assert not any(t.done() for t in tasks)
        fs.release_syncs()
        results = await asyncio.gather(first, *tasks)
    finally:
        fs.release_syncs()
    assert [r.status for r in results] == [PutMessageStatus.PUT_OK] * (count + 1)
    syncs = fs.commit_log_syncs()
    assert 1 <= syncs <= 4, f"{count + 1} puts took {syncs} commit log syncs"


def test_group_commit_from_threads(store_factory: StoreFactory) -> None:
    fs = RecordingFileSystem()
    store = _store(store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    count = 24
    fs.hold_syncs()
    try:
        with ThreadPoolExecutor(count) as pool:
            futures = [
                pool.submit(store.put_message, make_message(body=f"t{i}".encode()))
                for i in range(count)
            ]
            assert fs.commit_log_sync_entered.wait(10)
            assert _poll(lambda: store.commit_log.topic_queue_table.get("TopicTest-0", 0) == count)
            assert not any(f.done() for f in futures)
            fs.release_syncs()
            results = [f.result(10) for f in futures]
    finally:
        fs.release_syncs()
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    assert fs.commit_log_syncs() <= 4


def test_sync_flush_timeout_answers_flush_disk_timeout_but_keeps_the_message(
    store_factory: StoreFactory,
) -> None:
    fs = RecordingFileSystem()
    store = _store(
        store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=200
    )
    fs.hold_syncs()
    try:
        started = time.monotonic()
        result = store.put_message(make_message(body=b"slow disk"))
        elapsed = time.monotonic() - started
        assert result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
        assert 0.15 <= elapsed < 5
        assert result.is_ok  # stored, only not yet durable
        assert result.append_result is not None
        assert store.wait_for_dispatch()
        got = store.get_message("g", "TopicTest", 0, 0, 32)
        assert got.status is GetMessageStatus.FOUND
        assert got.message_count == 1
    finally:
        fs.release_syncs()


def test_slow_sync_times_out_too(store_factory: StoreFactory) -> None:
    fs = RecordingFileSystem()
    store = _store(
        store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=200
    )
    fs.sync_delay_s = 1.0
    try:
        result = store.put_message(make_message(body=b"slow"))
        assert result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
    finally:
        fs.sync_delay_s = 0.0
    assert store.wait_for_dispatch()
    assert store.get_message("g", "TopicTest", 0, 0, 32).message_count == 1


async def test_async_put_timeout_is_flush_disk_timeout(store_factory: StoreFactory) -> None:
    fs = RecordingFileSystem()
    store = _store(
        store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=200
    )
    fs.hold_syncs()
    try:
        result = await store.async_put_message(make_message(body=b"slow"))
    finally:
        fs.release_syncs()
    assert result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
    assert result.append_result is not None


async def test_async_put_does_not_block_the_event_loop_during_a_slow_sync(
    store_factory: StoreFactory,
) -> None:
    fs = RecordingFileSystem()
    store = _store(
        store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=3000
    )
    loop = asyncio.get_running_loop()
    fs.hold_syncs()
    try:
        put = asyncio.create_task(store.async_put_message(make_message(body=b"x")))
        assert await loop.run_in_executor(None, fs.commit_log_sync_entered.wait, 10)
        ticks = 0
        while ticks < 20:  # the loop keeps running other coroutines meanwhile
            await asyncio.sleep(0.005)
            ticks += 1
            assert not put.done()
        fs.release_syncs()
        result = await put
    finally:
        fs.release_syncs()
    assert result.status is PutMessageStatus.PUT_OK


def test_sync_flush_data_is_on_disk_for_a_new_reader(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    fs = RecordingFileSystem()
    store = _store(store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    result = store.put_message(make_message(body=b"persisted"))
    assert result.status is PutMessageStatus.PUT_OK
    assert fs.commit_log_syncs() >= 1
    path = Path(store.config.commit_log_dir) / "00000000000000000000"
    assert b"persisted" in path.read_bytes()


async def test_group_commit_keeps_answering_after_an_async_put_timed_out(
    store_factory: StoreFactory,
) -> None:
    """A timed-out async put must not take the group commit service down with it."""
    fs = RecordingFileSystem()
    store = _store(
        store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=200
    )
    fs.hold_syncs()
    try:
        timed_out = await store.async_put_message(make_message(body=b"slow"))
    finally:
        fs.release_syncs()
    assert timed_out.status is PutMessageStatus.FLUSH_DISK_TIMEOUT
    store.config.sync_flush_timeout = 3000
    later = await store.async_put_message(make_message(body=b"later"))
    assert later.status is PutMessageStatus.PUT_OK
    from_thread = await asyncio.get_running_loop().run_in_executor(
        None, store.put_message, make_message(body=b"thread")
    )
    assert from_thread.status is PutMessageStatus.PUT_OK


async def test_sync_flush_put_on_a_loop_is_dispatched_once_its_sync_is_done(
    store_factory: StoreFactory,
) -> None:
    """The loop dispatches its own small put after the sync, not while the group commit
    thread needs the GIL to run it (the reput thread is idle for the whole test)."""
    fs = RecordingFileSystem()
    store = _store(
        store_factory, fs, flush_disk_type=FlushDiskType.SYNC_FLUSH, reput_idle_interval=60_000
    )
    loop = asyncio.get_running_loop()
    fs.hold_syncs()
    try:
        put = asyncio.create_task(store.async_put_message(make_message(queue_id=1)))
        assert await loop.run_in_executor(None, fs.commit_log_sync_entered.wait, 10)
        await asyncio.sleep(0.05)
        assert store.get_max_offset_in_queue("TopicTest", 1) == 0
    finally:
        fs.release_syncs()
    assert (await put).status is PutMessageStatus.PUT_OK
    assert store.get_max_offset_in_queue("TopicTest", 1) == 1


def test_async_flush_thread_is_woken_only_once_least_pages_are_dirty(
    store_factory: StoreFactory,
) -> None:
    # Not started: the wake-up flag stays up for the test to read. A small append left to
    # the interval's round; least pages (4) of appends wake the thread for a flush.
    store = store_factory(start=False, flush_commit_log_least_pages=4)
    service = store.flush_real_time_service
    assert service is not None
    assert store.put_message(make_message("A", b"x" * 100)).is_ok
    assert service._wakeup_pending.locked()  # locked: no wakeup pending
    results = store.put_message_group([make_message("A", b"x" * 1024) for _ in range(16)])
    assert all(result.is_ok for result in results)
    assert not service._wakeup_pending.locked()


def test_index_files_are_synced_on_thorough_logic_flushes_only(
    store_factory: StoreFactory,
) -> None:
    # A sync write-protects the pages it wrote back, and the next store into each page
    # faults: syncing the index every round cost a fault per message. The checkpoint that
    # claims the index is written on thorough rounds only, so those are the ones that sync it.
    fs = RecordingFileSystem()
    clock = ManualClock(T0)  # the background rounds are never thorough: its clock stands
    store = _store(store_factory, fs, clock=clock)
    index_dir = os.path.realpath(store.config.index_dir) + os.sep
    assert store.put_message(make_message(keys="k1")).is_ok
    assert store.wait_for_dispatch()

    def index_syncs() -> int:
        with fs._paths_lock:
            return sum(1 for p in fs.synced if p.startswith(index_dir))

    before = index_syncs()
    store.flush_consume_queue_service.do_flush(2)
    assert index_syncs() == before
    assert store.checkpoint.index_msg_timestamp == 0

    store.flush_consume_queue_service.do_flush(0)
    assert index_syncs() > before
    assert store.checkpoint.index_msg_timestamp == T0


async def test_a_loops_put_wakes_group_commit_when_it_begins_to_wait(
    store_factory: StoreFactory,
) -> None:
    # Not started: the wake-up flag stays up for the test to read. Woken from inside the
    # append, the group commit thread found the GIL still held by the loop and slept again
    # on it; the loop wakes it at its await instead. A thread's put wakes it at once.
    store = store_factory(start=False, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    service = store.group_commit_service
    assert service is not None
    waiters = store.put_waiters()
    result, wait = store.append(make_message(body=b"loop"), waiters)
    assert wait is not None and wait.flush is not None
    assert service._wakeup_pending.locked()  # locked: no wakeup pending yet
    put = asyncio.create_task(store.await_put(result, wait, waiters))
    await asyncio.sleep(0)  # the task runs to its wait
    assert not service._wakeup_pending.locked()
    put.cancel()

    service.wait_for_running(0)  # take the wakeup
    result, wait = store.append(make_message(body=b"thread"))
    assert not service._wakeup_pending.locked()
