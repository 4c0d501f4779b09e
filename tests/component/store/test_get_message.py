"""get_message answers as RocketMQ's getMessage does."""

from __future__ import annotations

import pytest

from orbitmq.common import java_string_hash
from orbitmq.store import GetMessageStatus, MessageStore
from orbitmq.testing import FaultInjectingFileSystem
from tests.component.store.record_reads import count_record_reads
from tests.component.store.records import parse_record
from tests.conftest import StoreFactory
from tests.support import make_message


class TagFilter:
    """A subscription to some tags: matches on the consume queue's tag hash code only."""

    def __init__(self, *tags: str):
        self.codes = {java_string_hash(t) for t in tags}
        self.commit_log_checks = 0

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        return tags_code in self.codes

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        self.commit_log_checks += 1
        return True


def _put(store: MessageStore, count: int, *, tags: str | None = None, start: int = 0) -> None:
    for i in range(start, start + count):
        assert store.put_message(make_message(body=f"m{i}".encode(), tags=tags)).is_ok
    assert store.wait_for_dispatch()


def test_found_returns_records_and_next_begin_offset(store_factory: StoreFactory) -> None:
    store = store_factory()
    _put(store, 10)
    got = store.get_message("g", "TopicTest", 0, 3, 4)
    assert got.status is GetMessageStatus.FOUND
    assert got.message_count == 4
    assert got.message_queue_offsets == [3, 4, 5, 6]
    assert [parse_record(b).body for b in got.message_buffers] == [b"m3", b"m4", b"m5", b"m6"]
    assert got.next_begin_offset == 7
    assert got.min_offset == 0
    assert got.max_offset == 10
    assert got.buffer_total_size == sum(len(b) for b in got.message_buffers)
    assert got.body() == b"".join(bytes(b) for b in got.message_buffers)


def test_unknown_queue_is_no_matched_logic_queue(store_factory: StoreFactory) -> None:
    store = store_factory()
    _put(store, 2)
    assert (
        store.get_message("g", "NoSuchTopic", 0, 0, 32).status
        is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    )
    assert (
        store.get_message("g", "TopicTest", 7, 0, 32).status
        is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    )


def test_empty_queue_is_no_message_in_queue(store_factory: StoreFactory) -> None:
    store = store_factory()
    store.get_or_create_consume_queue("TopicTest", 1)
    got = store.get_message("g", "TopicTest", 1, 5, 32)
    assert got.status is GetMessageStatus.NO_MESSAGE_IN_QUEUE
    assert got.next_begin_offset == 0
    assert got.message_count == 0


def test_offset_at_max_is_overflow_one(store_factory: StoreFactory) -> None:
    store = store_factory()
    _put(store, 5)
    got = store.get_message("g", "TopicTest", 0, 5, 32)
    assert got.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    assert got.next_begin_offset == 5
    assert got.message_count == 0


def test_offset_beyond_max_is_overflow_badly(store_factory: StoreFactory) -> None:
    store = store_factory()
    _put(store, 5)
    got = store.get_message("g", "TopicTest", 0, 6, 32)
    assert got.status is GetMessageStatus.OFFSET_OVERFLOW_BADLY
    assert got.next_begin_offset == 0  # min offset 0: RocketMQ corrects to the min
    assert got.message_count == 0


def test_offset_below_min_after_retention_is_too_small(store_factory: StoreFactory) -> None:
    fs = FaultInjectingFileSystem()
    store = store_factory(
        fs=fs, mapped_file_size_commit_log=4096, mapped_file_size_consume_queue=8 * 20
    )
    for i in range(60):
        assert store.put_message(make_message(body=f"m{i}".encode() * 30)).is_ok
    assert store.wait_for_dispatch()
    fs.usage_ratio = 0.86  # over diskSpaceCleanForciblyRatio: delete all but the current file
    assert store.clean_resource_service.run_once() > 0
    new_min = store.get_min_offset_in_queue("TopicTest", 0)
    assert new_min > 0
    got = store.get_message("g", "TopicTest", 0, 0, 32)
    assert got.status is GetMessageStatus.OFFSET_TOO_SMALL
    assert got.next_begin_offset == new_min
    assert got.message_count == 0
    first = store.get_message("g", "TopicTest", 0, new_min, 1)
    assert first.status is GetMessageStatus.FOUND
    assert parse_record(first.message_buffers[0]).physical_offset >= store.min_phy_offset


def test_a_read_is_capped_by_max_transfer_count_in_memory(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.config.max_transfer_count_on_message_in_memory == 32
    _put(store, 40)
    got = store.get_message("g", "TopicTest", 0, 0, 64)
    assert got.status is GetMessageStatus.FOUND
    assert got.message_count == 32
    assert got.next_begin_offset == 32
    rest = store.get_message("g", "TopicTest", 0, 32, 64)
    assert rest.message_queue_offsets == list(range(32, 40))
    assert rest.next_begin_offset == 40


def test_a_smaller_configured_transfer_count_caps_a_read(store_factory: StoreFactory) -> None:
    store = store_factory(max_transfer_count_on_message_in_memory=5)
    _put(store, 12)
    got = store.get_message("g", "TopicTest", 0, 0, 64)
    assert got.message_count == 5
    assert got.next_begin_offset == 5


def test_a_read_is_capped_by_max_transfer_bytes_in_memory(store_factory: StoreFactory) -> None:
    store = store_factory(max_transfer_bytes_on_message_in_memory=4096)
    for i in range(10):
        assert store.put_message(make_message(body=bytes([65 + i]) * 1000)).is_ok
    assert store.wait_for_dispatch()
    got = store.get_message("g", "TopicTest", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    assert got.buffer_total_size <= 4096
    assert got.message_count == 3  # a fourth ~1.1 KB record would pass 4096 bytes
    assert got.next_begin_offset == 3


def test_tag_filter_skips_unmatched_messages_without_reading_them(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_factory()
    tags = ["TagA", "TagB", "TagA", "TagC", None, "TagB", "TagA"]
    physical: list[int] = []
    for i, tag in enumerate(tags):
        result = store.put_message(make_message(body=f"m{i}".encode(), tags=tag))
        assert result.append_result is not None
        physical.append(result.append_result.wrote_offset)
    assert store.wait_for_dispatch()

    read_offsets = count_record_reads(store, monkeypatch)
    wanted = TagFilter("TagA", "TagC")
    got = store.get_message("g", "TopicTest", 0, 0, 32, wanted)
    assert got.status is GetMessageStatus.FOUND
    assert got.message_queue_offsets == [0, 2, 3, 6]
    assert [parse_record(b).properties.get("TAGS") for b in got.message_buffers] == [
        "TagA",
        "TagA",
        "TagC",
        "TagA",
    ]
    assert got.next_begin_offset == len(tags)
    # Only the matching records were read from the commit log.
    assert read_offsets == [physical[i] for i in (0, 2, 3, 6)]
    assert wanted.commit_log_checks == 4
    assert got.filtered_count == 3

    from_middle = store.get_message("g", "TopicTest", 0, 4, 32, TagFilter("TagB"))
    assert from_middle.message_queue_offsets == [5]
    assert from_middle.next_begin_offset == len(tags)


def test_tag_filter_matching_nothing_is_no_matched_message(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = store_factory()
    _put(store, 6, tags="TagA")
    reads = count_record_reads(store, monkeypatch)
    got = store.get_message("g", "TopicTest", 0, 1, 32, TagFilter("TagZ"))
    assert got.status is GetMessageStatus.NO_MATCHED_MESSAGE
    assert got.message_count == 0
    assert got.next_begin_offset == 6  # every unit was looked at and skipped
    assert reads == []
