"""Many queues, few open files (R19): consume-queue files open on use and close beyond
maxOpenConsumeQueueFiles; background services live through EMFILE; the flush and the
clean-up visit only the queues that need it. Store files grow with their data."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from orbitmq.store import ConsumeQueue, MessageStore, MessageStoreConfig, PutMessageStatus
from orbitmq.store.mapped_file import ALLOCATION_CHUNK, Allocation, MappedFile
from orbitmq.testing import FaultInjectingFileSystem
from tests.component.store.records import read_bodies
from tests.component.store.test_flush import RecordingFileSystem
from tests.conftest import StoreFactory
from tests.support import make_message

TOPIC = "ManyQueues"
BOUND = 16


def _open_queue_descriptors(store: MessageStore) -> int:
    """Descriptors of this process on files of the store's consume queues."""
    root = os.path.realpath(store.config.consume_queue_dir) + os.sep
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed meanwhile
        count += target.startswith(root)
    return count


def _put_round_robin(store: MessageStore, queues: int, rounds: int, topic: str = TOPIC) -> None:
    for r in range(rounds):
        for q in range(queues):
            body = f"{q}:{r}".encode()
            assert store.put_message(make_message(topic, body, queue_id=q)).is_ok


def _read_queue(store: MessageStore, queue_id: int, topic: str = TOPIC) -> list[bytes]:
    return read_bodies(store, topic, queue_id)


def _expected(queue_id: int, rounds: int) -> list[bytes]:
    return [f"{queue_id}:{r}".encode() for r in range(rounds)]


def test_open_consume_queue_files_stay_within_the_bound_and_everything_reads_back(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    # Three units per file: every queue has several files too.
    settings = {"max_open_consume_queue_files": BOUND, "mapped_file_size_consume_queue": 60}
    store = store_factory(root, **settings)
    queues, rounds = 200, 7
    _put_round_robin(store, queues, rounds)
    assert store.wait_for_dispatch()
    cache = store.consume_queue_file_cache
    assert cache.open_count <= BOUND
    assert cache.evictions > 0
    # One descriptor per open file (its mapping's), and one each for a sync and a
    # reservation that may be under way meanwhile.
    assert _open_queue_descriptors(store) <= BOUND + 2
    for q in range(queues):
        assert _read_queue(store, q) == _expected(q, rounds)
    assert cache.open_count <= BOUND
    store.shutdown()
    assert _open_queue_descriptors(store) == 0

    reopened = store_factory(root, **settings)
    assert reopened.consume_queue_file_cache.open_count <= BOUND
    for q in range(queues):
        assert _read_queue(reopened, q) == _expected(q, rounds)
    # And it goes on writing where each queue ended.
    _put_round_robin(reopened, queues, 1, topic="Later")
    assert reopened.put_message(make_message(TOPIC, b"next", queue_id=3)).is_ok
    assert reopened.wait_for_dispatch()
    assert _read_queue(reopened, 3) == [*_expected(3, rounds), b"next"]
    assert _open_queue_descriptors(reopened) <= BOUND + 2


def test_writes_to_more_queues_than_the_bound_reopen_no_file(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    # R19 at speed: round robin over more queues than files the cache keeps open. A unit
    # for a closed file goes through the file; reopening its mapping for 20 bytes would
    # evict another file each time (an open, an mmap, a munmap and a write fault a unit).
    root = tmp_path / "store"
    store = store_factory(root, max_open_consume_queue_files=BOUND)
    queues, rounds = 10 * BOUND, 6
    _put_round_robin(store, queues, 1)  # creates every queue's file: evictions, unavoidable
    assert store.wait_for_dispatch()
    cache = store.consume_queue_file_cache
    created = cache.evictions
    assert created >= queues - BOUND
    for r in range(1, rounds):
        for q in range(queues):
            message = make_message(TOPIC, f"{q}:{r}".encode(), queue_id=q)
            assert store.put_message(message).is_ok
    assert store.wait_for_dispatch()
    assert cache.evictions == created
    assert cache.open_count <= BOUND
    # A queue written often gets its mapping back (the 4-queue topic beside the many).
    queue_files = [store.find_consume_queue(TOPIC, q) for q in range(queues)]
    files = [cq.mapped_file_queue.last() if cq else None for cq in queue_files]
    hot = next(q for q, mapped in enumerate(files) if mapped is not None and not mapped.is_open)
    last = files[hot]
    assert last is not None
    for r in range(rounds, rounds + 3):
        assert store.put_message(make_message(TOPIC, f"{hot}:{r}".encode(), queue_id=hot)).is_ok
        assert store.wait_for_dispatch()
    assert last.is_open
    # What went through the file is what a reader sees through a mapping, and on disk.
    expected = {q: _expected(q, rounds + 3 if q == hot else rounds) for q in range(queues)}
    for q in range(queues):
        assert _read_queue(store, q) == expected[q]
    store.shutdown()
    reopened = store_factory(root, max_open_consume_queue_files=BOUND)
    for q in range(queues):
        assert _read_queue(reopened, q) == expected[q]


def test_emfile_stops_dispatch_and_writes_for_a_while_and_no_service_dies(
    store_factory: StoreFactory,
) -> None:
    fs = FaultInjectingFileSystem()
    store = store_factory(fs=fs, max_open_consume_queue_files=BOUND)
    queues = 3 * BOUND
    _put_round_robin(store, queues, 1)
    assert store.wait_for_dispatch()

    fs.open_error = errno.EMFILE  # the process has no descriptor left
    # A new queue needs a new file: the message is stored, but cannot be dispatched.
    assert store.put_message(make_message("NewTopic", b"stored", queue_id=0)).is_ok
    assert not store.wait_for_dispatch(timeout_s=0.5)
    # Until its consume queue can be written, the store takes no more (as RocketMQ's
    # WRITE_LOGICS_QUEUE_ERROR): acknowledging more would pile up messages nobody sees.
    assert not store.running_flags.is_writeable
    refused = store.put_message(make_message("NewTopic", b"refused", queue_id=1))
    assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "consume queues cannot be written" in refused.remark
    assert os.strerror(errno.EMFILE) in refused.remark
    store.flush_consume_queue_service.wakeup()
    store.clean_resource_service.wakeup()
    services = list(store._services())
    assert all(s._thread is not None and s._thread.is_alive() for s in services)

    fs.open_error = None
    assert store.wait_for_dispatch(timeout_s=10)
    assert store.running_flags.is_writeable
    _put_round_robin(store, queues, 1)  # most of these files were closed: they open again
    assert store.wait_for_dispatch(timeout_s=10)
    for q in range(queues):
        assert _read_queue(store, q) == _expected(q, 1) * 2
    assert _read_queue(store, 0, topic="NewTopic") == [b"stored"]
    assert all(s._thread is not None and s._thread.is_alive() for s in services)


def _synced_queue_files(fs: RecordingFileSystem, store: MessageStore) -> set[str]:
    root = os.path.realpath(store.config.consume_queue_dir) + os.sep
    return {os.path.relpath(p, root) for p in fs.synced if p.startswith(root)}


def test_a_flush_round_visits_only_the_queues_written_since_the_last(
    store_factory: StoreFactory,
) -> None:
    fs = RecordingFileSystem()
    store = store_factory(fs=fs, start=False, max_open_consume_queue_files=BOUND)
    _put_round_robin(store, 50, 1)
    store.reput_message_service.do_reput()
    store.flush_consume_queue_service.do_flush(0)
    assert len(_synced_queue_files(fs, store)) == 50

    fs.synced.clear()
    store.flush_consume_queue_service.do_flush(0)
    assert _synced_queue_files(fs, store) == set()
    assert store.put_message(make_message(TOPIC, b"one more", queue_id=7)).is_ok
    store.reput_message_service.do_reput()
    store.flush_consume_queue_service.do_flush(0)
    assert _synced_queue_files(fs, store) == {f"{TOPIC}/7/{0:020d}"}


def test_queues_left_with_a_few_units_wait_for_the_thorough_round(
    store_factory: StoreFactory,
) -> None:
    """A regular round syncs a queue once it holds 2 dirty pages: one with a single unit is
    left for the thorough round, and regular rounds do not look at it again meanwhile (with
    100,000 such queues, that look cost 7 % of a core on an idle broker)."""
    fs = RecordingFileSystem()
    store = store_factory(fs=fs, start=False, max_open_consume_queue_files=BOUND)
    _put_round_robin(store, 50, 1)
    store.reput_message_service.do_reput()
    visits: list[ConsumeQueue] = []

    def counted(queue: ConsumeQueue) -> Callable[..., bool]:
        flush = queue.flush

        def visit(least_pages: int) -> bool:
            visits.append(queue)
            return flush(least_pages)

        return visit

    for queue in store.all_consume_queues():
        queue.flush = counted(queue)  # type: ignore[method-assign]
    flush = store.flush_consume_queue_service.do_flush
    flush(2)
    assert (len(visits), _synced_queue_files(fs, store)) == (50, set())
    visits.clear()
    flush(2)
    assert len(visits) == 0
    flush(0)
    assert len(visits) == 50
    assert len(_synced_queue_files(fs, store)) == 50


def test_the_clean_up_visits_the_queues_only_when_the_commit_log_lost_files(
    store_factory: StoreFactory,
) -> None:
    fs = FaultInjectingFileSystem()
    store = store_factory(fs=fs, start=False, max_open_consume_queue_files=BOUND)
    _put_round_robin(store, 4 * BOUND, 1)
    store.reput_message_service.do_reput()
    store.clean_resource_service.run_once()  # the first round looks at every queue
    opens = fs.opens
    for _ in range(3):
        store.clean_resource_service.run_once()
    assert fs.opens == opens  # no closed file was opened to be looked at


def test_store_files_take_disk_as_data_arrives(tmp_path: Path) -> None:
    """RocketMQ's defaults (a 1 GiB commit log file, a 420 MB index file) with
    warmMapedFileEnable off: the store takes megabytes, not 1.4 GB, before its first
    messages. With it on, files get every block when created."""
    root = tmp_path / "store"
    config = MessageStoreConfig(store_path_root_dir=str(root))
    assert not config.warm_maped_file_enable
    store = MessageStore(config)
    store.load()
    store.start()
    try:
        for i in range(100):
            assert store.put_message(make_message(body=b"x" * 1024, keys=f"k{i}")).is_ok
        assert store.wait_for_dispatch()
        store.flush_consume_queue_service.do_flush(0)
        used = sum(p.stat().st_blocks * 512 for p in root.rglob("*") if p.is_file())
        # The index file's header and hash slots (20 MB) are reserved at once; the rest is
        # what the data took.
        assert used < 24 * 1024 * 1024, f"{used} bytes on disk"
        assert len(store.query_message("TopicTest", "k42", 32, 0, 2**62).message_buffers) == 1
    finally:
        store.shutdown()


def test_data_end_bounds_what_recovery_reads(tmp_path: Path) -> None:
    fs = FaultInjectingFileSystem()
    size = 6_000_000
    path = str(tmp_path / f"{0:020d}")
    sparse = MappedFile(path, size, fs, create=True, allocation=Allocation())
    if sparse.data_end() == size:
        pytest.skip("this file system does not report where a sparse file's data ends")
    assert sparse.data_end() == 0
    sparse.append(b"\x01" * 20)
    assert 0 < sparse.data_end() <= ALLOCATION_CHUNK
    sparse.close()
    full = MappedFile(str(tmp_path / f"{size:020d}"), 8192, fs, create=True)
    full.append(b"\x02" * 8192)
    assert full.data_end() == 8192
    full.close()


@pytest.mark.parametrize(("soft", "bound"), [(1024, 512), (4096, 2048), (20_000, 15_904)])
def test_the_bound_leaves_spare_descriptors_not_half_of_a_large_limit(
    soft: int, bound: int
) -> None:
    # Half of a 20,000 limit left ten thousand queues (and a few more) just over the bound,
    # every file closed and opened again in turn; small limits keep half for the rest.
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < soft:
        pytest.skip(f"the hard open-files limit is {hard}")
    code = (
        "import resource\n"
        f"resource.setrlimit(resource.RLIMIT_NOFILE, ({soft}, {hard}))\n"
        "from orbitmq.store.mapped_file_cache import open_files_bound\n"
        "print(open_files_bound(32768))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert int(out.stdout) == bound
