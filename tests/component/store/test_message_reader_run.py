"""The run path of a read (every message wanted) answers exactly as the per-message loop."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.filter import (
    TagMessageFilter,
    build_subscription,
    build_subscription_data,
)
from orbitmq.store import (
    GetMessageResult,
    GetMessageStatus,
    MessageFilter,
    MessageStore,
    message_reader,
)
from orbitmq.store.message_filter import matches_every_message
from tests.component.store.record_reads import count_record_reads
from tests.component.store.records import parse_record
from tests.support import make_message, small_config

COMMIT_LOG_FILE_BYTES = 8 * 1024
QUEUE_FILE_UNITS = 50
TOPIC = "TopicTest"
#: A queue with blank units among its messages (a gap the dispatcher filled).
HOLES = "Holes"
#: A queue whose units step back in the commit log (no real queue does).
SHUFFLED = "Shuffled"


class AskedFilter:
    """Takes every message but does not say so: it is asked about each one."""

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        del tags_code
        return True

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        del record
        return True


FILTERS: list[MessageFilter | None] = [
    None,
    TagMessageFilter(None),
    TagMessageFilter(build_subscription_data(TOPIC, "*")),
    TagMessageFilter(build_subscription(TOPIC, "a > 1", "SQL92")),
    TagMessageFilter(build_subscription_data(TOPIC, "TagA || TagC")),
    AskedFilter(),
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MessageStore]:
    """Two interleaved queues of records from 100 bytes to 1.6 KB, in commit log files of
    8 KiB (runs cross them) and consume queue files of 50 units; and two queues written by
    hand over the records of the first: one with gaps, one out of order."""
    config = small_config(
        tmp_path_factory.mktemp("store"),
        mapped_file_size_commit_log=COMMIT_LOG_FILE_BYTES,
        mapped_file_size_consume_queue=QUEUE_FILE_UNITS * 20,
    )
    made = MessageStore(config)
    made.load()
    made.start()
    rng = random.Random(7)
    for _ in range(300):
        body = bytes([rng.randrange(256)]) * rng.randrange(1, 1500)
        tags = rng.choice([None, "TagA", "TagB", "TagC"])
        assert made.put_message(make_message(body=body, tags=tags, queue_id=rng.randrange(2))).is_ok
    assert made.wait_for_dispatch()
    source = made.find_consume_queue(TOPIC, 0)
    assert source is not None
    units = [source.read_unit(index) for index in range(source.max_offset_in_queue)]
    holes = made.get_or_create_consume_queue(HOLES, 0)
    cq_offset = 0
    for index, unit in enumerate(units):
        assert unit is not None
        cq_offset += 3 if index % 7 == 6 else 1  # two blank units before every seventh
        holes.put_message_position_info(*unit, cq_offset)
    shuffled = made.get_or_create_consume_queue(SHUFFLED, 0)
    for index in range(len(units)):
        unit = units[min(index ^ 1, len(units) - 1)]  # each pair swapped
        assert unit is not None
        shuffled.put_message_position_info(*unit, index)
    yield made
    made.shutdown()


def _address(record: memoryview) -> int:
    return int(np.frombuffer(record, np.uint8).ctypes.data)


def _read(
    store: MessageStore,
    config_changes: dict[str, Any],
    read: tuple[str, int, int, int, int | None],
    message_filter: MessageFilter | None,
) -> GetMessageResult:
    topic, queue_id, offset, max_msg_nums, max_total_bytes = read
    return message_reader.read_messages(
        dataclasses.replace(store.config, **config_changes),
        store.commit_log,
        store.find_consume_queue(topic, queue_id),
        offset,
        max_msg_nums,
        message_filter,
        max_total_bytes,
    )


@settings(max_examples=500, deadline=None)
@given(data=st.data())
def test_the_run_path_answers_as_the_loop(store: MessageStore, data: st.DataObject) -> None:
    topic, queue_id = data.draw(
        st.sampled_from([(TOPIC, 0), (TOPIC, 1), (HOLES, 0), (SHUFFLED, 0)])
    )
    queue = store.find_consume_queue(topic, queue_id)
    assert queue is not None
    end = queue.max_offset_in_queue
    offset = data.draw(st.integers(0, end) | st.integers(max(0, end - 40), end))  # and its tail
    read = (
        topic,
        queue_id,
        offset,
        data.draw(st.integers(-1, 40)),
        data.draw(st.none() | st.integers(0, 30_000)),
    )
    config_changes = {
        "max_transfer_count_on_message_in_memory": data.draw(st.integers(0, 40)),
        "max_transfer_bytes_on_message_in_memory": data.draw(st.integers(0, 30_000)),
        "max_transfer_count_on_message_in_disk": data.draw(st.integers(0, 10)),
        "max_transfer_bytes_on_message_in_disk": data.draw(st.integers(0, 10_000)),
        "access_message_in_memory_max_ratio": 100,
    }
    message_filter = data.draw(st.sampled_from(FILTERS))
    commit_log_files = store.commit_log.mapped_file_queue
    with pytest.MonkeyPatch.context() as patch:
        # The machine's memory (every message in memory), or less than the log holds, so
        # older messages count as on disk.
        memory_bytes = data.draw(st.none() | st.integers(0, store.commit_log.max_offset))
        if memory_bytes is not None:
            patch.setattr(message_reader, "TOTAL_PHYSICAL_MEMORY", memory_bytes)
        damage = data.draw(st.sampled_from(["none", "first file gone", "tail unwritten"]))
        if damage == "first file gone":
            patch.setattr(commit_log_files, "mapped_files", commit_log_files.mapped_files[1:])
        elif damage == "tail unwritten":
            last = commit_log_files.mapped_files[-1]
            patch.setattr(last, "wrote_position", last.wrote_position // 2)
        by_run = _read(store, config_changes, read, message_filter)
        patch.setattr(message_reader, "_take_run", lambda *args: False)
        by_loop = _read(store, config_changes, read, message_filter)
    assert by_run == by_loop  # every field; records compared byte for byte
    assert list(map(_address, by_run.message_buffers)) == list(
        map(_address, by_loop.message_buffers)
    )


def test_whole_queues_are_read_by_runs_across_commit_log_files(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[bool] = []
    take_run = message_reader._take_run

    def spy(*args: object) -> bool:
        taken.append(take_run(*args))  # type: ignore[arg-type]
        return taken[-1]

    monkeypatch.setattr(message_reader, "_take_run", spy)
    files_per_read: list[int] = []
    for queue_id in (0, 1):
        offset = 0
        while True:
            got = store.get_message("g", TOPIC, queue_id, offset, 32)
            if got.status is not GetMessageStatus.FOUND:
                break
            files = {
                parse_record(b).physical_offset // COMMIT_LOG_FILE_BYTES
                for b in got.message_buffers
            }
            files_per_read.append(len(files))
            offset = got.next_begin_offset
        assert offset == store.get_max_offset_in_queue(TOPIC, queue_id)
    assert taken and all(taken)
    assert max(files_per_read) > 1


@pytest.mark.parametrize("message_filter", FILTERS[:4], ids=repr)
def test_a_read_of_every_message_does_not_look_records_up_one_by_one(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch, message_filter: MessageFilter | None
) -> None:
    lookups = count_record_reads(store, monkeypatch)
    got = store.get_message("g", TOPIC, 0, 3, 20, message_filter)
    assert got.status is GetMessageStatus.FOUND
    assert got.message_queue_offsets == list(range(3, 23))
    assert lookups == []


@pytest.mark.parametrize(
    ("message_filter", "takes_all"),
    [(f, True) for f in FILTERS[:4]] + [(FILTERS[4], False), (AskedFilter(), False)],
    ids=repr,
)
def test_which_filters_take_every_message(
    message_filter: MessageFilter | None, takes_all: bool
) -> None:
    assert matches_every_message(message_filter) is takes_all
