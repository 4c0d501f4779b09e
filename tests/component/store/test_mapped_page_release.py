"""Releasing mapped pages: an idle store gives its resident pages back and loses nothing."""

from __future__ import annotations

import os
from pathlib import Path

from orbitmq.common import OS_FILE_SYSTEM
from orbitmq.store import GetMessageStatus, MappedFile
from orbitmq.store.mapped_page_release_service import MappedPageReleaseService
from orbitmq.testing import ManualClock
from tests.conftest import StoreFactory
from tests.eventually import eventually
from tests.support import make_message

SIZE = 1 << 20


def resident_kib(path: str) -> int:
    """Resident KiB of this process's mappings of ``path`` (from /proc/self/smaps)."""
    total = 0
    inside = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                inside = len(head) >= 6 and head[5] == path
            elif inside and head[0] == "Rss:":
                total += int(head[1])
    return total


def test_released_pages_leave_the_resident_set_and_keep_their_bytes(tmp_path: Path) -> None:
    path = str(tmp_path / "00000000000000000000")
    mapped = MappedFile(path, SIZE, OS_FILE_SYSTEM, create=True)
    through_mapping = bytes(range(256)) * 1024  # 256 KiB, dirty in the mapping, not flushed
    through_file = b"\x5a" * (256 * 1024)
    assert mapped.append(through_mapping)
    mapped.write(len(through_mapping), through_file)
    mapped.wrote_position += len(through_file)
    assert bytes(mapped.select(0)) == through_mapping + through_file
    assert resident_kib(path) >= 500

    mapped.release_pages()

    assert resident_kib(path) == 0
    fd = os.open(path, os.O_RDONLY)
    try:
        assert os.pread(fd, 512 * 1024, 0) == through_mapping + through_file
    finally:
        os.close(fd)
    assert bytes(mapped.select(0)) == through_mapping + through_file
    assert mapped.flush() == 512 * 1024
    mapped.close()
    mapped.release_pages()  # a closed file has nothing to release and does not raise


def test_the_store_releases_every_mapped_file_and_still_serves_and_recovers(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    store = store_factory(mapped_page_release_idle_interval=0)
    assert store.mapped_page_release_service is None
    for i in range(200):
        store.put_message(make_message(body=bytes([i]) * 1000, queue_id=i % 2, keys=f"k{i}"))
    assert store.wait_for_dispatch()
    for queue_id in (0, 1):
        assert store.get_message("g", "TopicTest", queue_id, 0, 32).status is (
            GetMessageStatus.FOUND
        )
    files = list(store.mapped_files())
    root = Path(store.config.store_path_root_dir)
    assert {Path(m.file_name).relative_to(root).parts[0] for m in files} == {
        "commitlog",
        "consumequeue",
        "index",
    }
    assert sum(resident_kib(m.file_name) for m in files) > 0

    assert store.release_mapped_pages() == len(files)

    assert sum(resident_kib(m.file_name) for m in files) == 0
    for queue_id in (0, 1):
        result = store.get_message("g", "TopicTest", queue_id, 0, 200)
        assert result.status is GetMessageStatus.FOUND
        assert len(result.message_buffers) == 32  # maxTransferCountOnMessageInMemory
    assert len(store.query_message("TopicTest", "k7", 10, 0, 1 << 62).message_buffers) == 1
    store.shutdown()
    reopened = store_factory(tmp_path / "store")
    assert reopened.get_max_offset_in_queue("TopicTest", 0) == 100
    assert reopened.get_max_offset_in_queue("TopicTest", 1) == 100


class _Store:
    """What the service watches and calls: an activity mark and a release count."""

    def __init__(self) -> None:
        self.mark = (0, 0)
        self.releases = 0

    def release(self) -> int:
        self.releases += 1
        return 3


def test_pages_go_once_per_idle_spell_after_the_interval() -> None:
    clock = ManualClock(1_000_000)
    store = _Store()
    service = MappedPageReleaseService(10_000, lambda: store.mark, store.release, clock)

    assert service.check() == 0  # the first look only learns the mark
    clock.advance(9_999)
    assert service.check() == 0
    clock.advance(1)
    assert service.check() == 3
    clock.advance(60_000)
    assert service.check() == 0  # released already; nothing was touched since
    assert store.releases == 1

    store.mark = (0, 1)  # a read
    clock.advance(1)
    assert service.check() == 0  # activity restarts the idle clock
    clock.advance(9_999)
    assert service.check() == 0
    store.mark = (4096, 1)  # a put, just before the interval would have ended
    clock.advance(1)
    assert service.check() == 0
    clock.advance(10_000)
    assert service.check() == 3
    assert store.releases == 2


def test_the_service_runs_with_the_store_and_releases_when_idle(
    store_factory: StoreFactory,
) -> None:
    store = store_factory(mapped_page_release_idle_interval=200)
    assert store.mapped_page_release_service is not None
    for i in range(50):
        store.put_message(make_message(body=bytes([i]) * 1000))
    assert store.wait_for_dispatch()
    result = store.get_message("g", "TopicTest", 0, 0, 32)
    assert result.status is GetMessageStatus.FOUND
    assert all(len(bytes(record)) > 1000 for record in result.message_buffers)  # touched
    commit_log = store.commit_log.mapped_file_queue.mapped_files[0].file_name
    assert resident_kib(commit_log) > 0
    # Released 200-250 ms after the last read.
    eventually(lambda: resident_kib(commit_log) == 0, 5, what="the pages to be released")
    assert resident_kib(commit_log) == 0
