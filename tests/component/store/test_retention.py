"""Retention: which commit log files go when, and how consume queues, index files and queue
min offsets follow. Driven by ``clean_resource_service.run_once()`` with a manual clock, a
chosen disk usage and file ages set with ``os.utime``."""

from __future__ import annotations

import datetime as dt
import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from orbitmq.store import (
    GetMessageStatus,
    MessageStore,
    PutMessageStatus,
    clean_expired_consume_queues,
)
from orbitmq.testing import FaultInjectingFileSystem, ManualClock
from tests.component.store.records import INDEX_HEADER, file_name, list_files, parse_record
from tests.conftest import StoreFactory
from tests.support import make_message

CL_SIZE = 4096
CQ_UNITS = 4
HOUR_MS = 3_600_000


def _local_ms(day: int, hour: int, minute: int = 0) -> int:
    return int(dt.datetime(2024, 1, day, hour, minute).timestamp() * 1000)


@dataclass
class Scene:
    store: MessageStore
    fs: FaultInjectingFileSystem
    clock: ManualClock
    physical: list[int]  # commit log offset of each TopicTest message, by queue offset

    @property
    def commit_log_files(self) -> list[str]:
        return list_files(self.store.config.commit_log_dir)

    def age(self, index: int, hours: float) -> None:
        """Make commit log file ``index`` look last modified ``hours`` before the clock."""
        path = Path(self.store.config.commit_log_dir) / self.commit_log_files[index]
        seconds = (self.clock.now_ms() - hours * HOUR_MS) / 1000
        os.utime(path, (seconds, seconds))


@pytest.fixture
def scene(store_factory: StoreFactory) -> Scene:
    """Five commit log files of TopicTest messages, services not started (no background
    flush can touch file times; dispatch is run by hand). The clock says 10:30."""
    fs = FaultInjectingFileSystem()
    fs.usage_ratio = 0.5
    clock = ManualClock(_local_ms(10, 10, 30))
    store = store_factory(
        fs=fs,
        clock=clock,
        start=False,
        mapped_file_size_commit_log=CL_SIZE,
        mapped_file_size_consume_queue=CQ_UNITS * 20,
        max_index_num=21,
    )
    physical: list[int] = []
    i = 0
    while store.max_phy_offset < 4 * CL_SIZE + 100:
        if i < 3:
            old = store.put_message(make_message("OldTopic", b"old", queue_id=1))
            assert old.is_ok
        result = store.put_message(make_message(body=f"m{i:03d}".encode() * 60))
        assert result.append_result is not None
        physical.append(result.append_result.wrote_offset)
        i += 1
    store.reput_message_service.do_reput()
    made = Scene(store, fs, clock, physical)
    assert len(made.commit_log_files) == 5
    return made


def test_expired_files_go_only_at_the_delete_when_hour(scene: Scene) -> None:
    assert scene.store.config.delete_when == "04"
    assert scene.store.config.file_reserved_time == 72
    scene.age(0, 73)
    scene.age(1, 72.5)
    scene.age(2, 1)  # not expired: stops the deletion there
    before = scene.commit_log_files
    assert scene.store.clean_resource_service.run_once() == 0  # 10:30: not the hour
    assert scene.commit_log_files == before

    scene.clock.set(_local_ms(11, 4, 10))  # the next day at 04:10
    assert scene.store.clean_resource_service.run_once() == 2
    assert scene.commit_log_files == before[2:]
    assert scene.store.min_phy_offset == 2 * CL_SIZE
    assert scene.store.clean_resource_service.run_once() == 0  # file 2 is 18 h old


def test_several_delete_when_hours(scene: Scene) -> None:
    scene.store.config.delete_when = "03;16"
    scene.age(0, 100)
    scene.clock.set(_local_ms(10, 4, 0))
    assert scene.store.clean_resource_service.run_once() == 0
    scene.clock.set(_local_ms(10, 16, 59))
    assert scene.store.clean_resource_service.run_once() == 1


def test_over_disk_max_used_space_ratio_expired_files_go_at_once(scene: Scene) -> None:
    scene.age(0, 80)
    scene.age(1, 73)
    scene.age(2, 10)
    before = scene.commit_log_files
    scene.fs.usage_ratio = 0.74
    assert scene.store.clean_resource_service.run_once() == 0
    scene.fs.usage_ratio = 0.76  # over diskMaxUsedSpaceRatio 75 %, at 10:30
    assert scene.store.clean_resource_service.run_once() == 2
    assert scene.commit_log_files == before[2:]  # the unexpired file stays


def test_over_clean_forcibly_ratio_unexpired_files_go_too_but_never_the_last(
    scene: Scene,
) -> None:
    before = scene.commit_log_files
    scene.fs.usage_ratio = 0.86  # over diskSpaceCleanForciblyRatio 0.85; nothing is expired
    assert scene.store.clean_resource_service.run_once() == 4
    assert scene.commit_log_files == before[-1:]
    assert scene.store.clean_resource_service.run_once() == 0  # the current file stays
    assert scene.commit_log_files == before[-1:]
    # And the store keeps working on it.
    result = scene.store.put_message(make_message(body=b"still here"))
    assert result.status is PutMessageStatus.PUT_OK


def test_clean_forcibly_disabled_keeps_unexpired_files(scene: Scene) -> None:
    scene.store.config.clean_file_forcibly_enable = False
    scene.age(0, 80)
    scene.fs.usage_ratio = 0.86
    assert scene.store.clean_resource_service.run_once() == 1


def test_over_the_warning_level_puts_are_refused_until_usage_drops(scene: Scene) -> None:
    scene.fs.usage_ratio = 0.95  # over diskSpaceWarningLevelRatio 0.90
    scene.store.clean_resource_service.run_once()
    before = scene.store.max_phy_offset
    refused = scene.store.put_message(make_message(body=b"no room"))
    assert refused.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "disk usage" in refused.remark
    assert "95%" in refused.remark
    assert scene.store.max_phy_offset == before

    scene.fs.usage_ratio = 0.5
    scene.store.clean_resource_service.run_once()
    accepted = scene.store.put_message(make_message(body=b"room again"))
    assert accepted.status is PutMessageStatus.PUT_OK


def _index_headers(store: MessageStore) -> dict[str, tuple[int, ...]]:
    directory = Path(store.config.index_dir)
    return {
        name: INDEX_HEADER.unpack_from((directory / name).read_bytes(), 0)
        for name in list_files(directory)
    }


def test_consume_queues_index_and_min_offsets_follow_the_commit_log(scene: Scene) -> None:
    store = scene.store
    queue_dir = Path(store.config.consume_queue_dir) / "TopicTest" / "0"
    cq_before = list_files(queue_dir)
    assert len(cq_before) > 3
    index_before = _index_headers(store)
    assert len(index_before) > 2
    max_offset = store.get_max_offset_in_queue("TopicTest", 0)
    assert store.get_min_offset_in_queue("TopicTest", 0) == 0

    scene.fs.usage_ratio = 0.86
    assert store.clean_resource_service.run_once() == 4
    min_phy = store.min_phy_offset
    assert min_phy == 4 * CL_SIZE

    # The queue's min offset: its first message still in the commit log.
    new_min = next(i for i, p in enumerate(scene.physical) if p >= min_phy)
    assert new_min > 0
    assert store.get_min_offset_in_queue("TopicTest", 0) == new_min
    assert store.get_max_offset_in_queue("TopicTest", 0) == max_offset
    # Consume-queue files whose every unit points into deleted files are gone.
    sizes = [p2 - p1 for p1, p2 in itertools.pairwise(scene.physical)]
    expected_first_file = next(
        k
        for k in range(len(cq_before))
        if k == len(cq_before) - 1
        or scene.physical[k * CQ_UNITS + CQ_UNITS - 1] + sizes[k * CQ_UNITS + CQ_UNITS - 1]
        > min_phy
    )
    assert expected_first_file > 0
    assert list_files(queue_dir) == cq_before[expected_first_file:]
    assert list_files(queue_dir)[0] == file_name(expected_first_file * CQ_UNITS * 20)

    # Reads below the new min are told where to start again.
    old = store.get_message("g", "TopicTest", 0, 0, 32)
    assert old.status is GetMessageStatus.OFFSET_TOO_SMALL
    assert old.next_begin_offset == new_min
    if new_min > 1:
        assert store.get_message("g", "TopicTest", 0, new_min - 1, 32).status is (
            GetMessageStatus.OFFSET_TOO_SMALL
        )
    first = store.get_message("g", "TopicTest", 0, new_min, 32)
    assert first.status is GetMessageStatus.FOUND
    assert first.message_queue_offsets[0] == new_min
    assert parse_record(first.message_buffers[0]).physical_offset == scene.physical[new_min]
    assert store.get_earliest_message_time("TopicTest", 0) > 0

    # A queue whose messages were all in deleted files: min offset moves to its max.
    assert store.get_max_offset_in_queue("OldTopic", 1) == 3
    assert store.get_min_offset_in_queue("OldTopic", 1) == 3
    gone = store.get_message("g", "OldTopic", 1, 0, 32)
    assert gone.status is GetMessageStatus.OFFSET_TOO_SMALL
    assert gone.next_begin_offset == 3

    # Index files whose entries are all older than the commit log's min are deleted.
    names = list(index_before)
    expected_index = [n for n in names[:-1] if index_before[n][3] >= min_phy] + names[-1:]
    assert len(expected_index) < len(names)
    assert list_files(store.config.index_dir) == expected_index

    # New puts continue the queue after its max offset.
    result = store.put_message(make_message(body=b"after retention"))
    assert result.append_result is not None
    assert result.append_result.logics_offset == max_offset


def test_manual_delete_removes_expired_files_outside_the_delete_when_hour(scene: Scene) -> None:
    scene.age(0, 73)
    scene.age(1, 73)
    assert scene.store.clean_resource_service.run_once() == 0  # 10:30, disk at 50 %
    scene.store.clean_commit_log_service.execute_delete_files_manually()
    assert scene.store.clean_resource_service.run_once() == 2
    assert len(scene.commit_log_files) == 3


def test_a_store_that_never_stored_a_message_runs_retention_cleanly(
    store_factory: StoreFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # A fresh store has no commitlog directory until its first put; the retention round
    # (every cleanResourceInterval) must not fail on it (it logged a traceback every 10 s).
    store = store_factory()
    assert not Path(store.config.commit_log_dir).exists()
    assert store.clean_resource_service.run_once() == 0
    assert "retention failed" not in caplog.text


def test_clean_expired_consume_queues_drops_queues_retention_emptied(scene: Scene) -> None:
    """mqadmin cleanExpiredCQ: OldTopic's queue points only into deleted files and goes
    (files, table entry and the commit log's queue offset); TopicTest's stays."""
    store = scene.store
    old_dir = Path(store.config.consume_queue_dir) / "OldTopic" / "1"
    assert list_files(old_dir)
    # Nothing is expired before retention ran.
    assert clean_expired_consume_queues(store.commit_log, store.consume_queue_table, set()) == 0
    scene.fs.usage_ratio = 0.86
    assert store.clean_resource_service.run_once() == 4

    # A kept topic (the broker keeps SCHEDULE_TOPIC_XXXX) is never touched.
    kept = {"OldTopic"}
    assert clean_expired_consume_queues(store.commit_log, store.consume_queue_table, kept) == 0
    assert clean_expired_consume_queues(store.commit_log, store.consume_queue_table, set()) == 1
    assert "OldTopic" not in store.consume_queue_table
    assert "OldTopic-1" not in store.commit_log.topic_queue_table
    assert not old_dir.exists()
    assert store.find_consume_queue("TopicTest", 0) is not None
