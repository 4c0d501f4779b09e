"""ConsumeQueue units as RocketMQ lays them out, read straight from the files."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from orbitmq.common import Message, MessageExtBatch, encode_batch_messages
from orbitmq.store import CQ_STORE_UNIT_SIZE, MessageStoreConfig, consume_queue
from tests.component.store.records import file_name, java_hash, list_files, read_cq_units
from tests.conftest import StoreFactory
from tests.support import make_message


def test_unit_size_and_default_file_size_constants() -> None:
    assert CQ_STORE_UNIT_SIZE == 20
    assert MessageStoreConfig().mapped_file_size_consume_queue == 300_000 * 20 == 6_000_000


def test_java_hash_reference_values() -> None:
    """The test's own String.hashCode agrees with values computed by a JVM."""
    assert java_hash("") == 0
    assert java_hash("TagA") == 2598919
    assert java_hash("hello") == 99162322
    assert java_hash("Aa") == java_hash("BB") == 2112
    assert java_hash("Hello World") == -862545276  # wraps to negative like Java
    assert java_hash("polygenelubricants") == -(2**31)


def test_units_hold_offset_size_and_tag_hash(store_factory: StoreFactory) -> None:
    store = store_factory()
    tags = ["TagA", None, "Hello World", "TagA", ""]
    expected = []
    for i, tag in enumerate(tags):
        result = store.put_message(make_message(body=f"m{i}".encode() * (i + 1), tags=tag))
        assert result.append_result is not None
        code = java_hash(tag) if tag else 0
        expected.append((result.append_result.wrote_offset, result.append_result.wrote_bytes, code))
    # Another queue and another topic get their own files.
    other = store.put_message(make_message("OtherTopic", b"o", queue_id=2, tags="TagB"))
    assert other.append_result is not None
    assert store.wait_for_dispatch()

    root = Path(store.config.consume_queue_dir)
    path = root / "TopicTest" / "0" / file_name(0)
    assert os.path.getsize(path) == store.config.mapped_file_size_consume_queue == 20_000
    raw = path.read_bytes()
    assert raw[len(tags) * 20 :] == bytes(len(raw) - len(tags) * 20)  # nothing else written
    units = [struct.unpack_from(">qiq", raw, i * 20) for i in range(len(tags))]
    assert units == expected
    assert expected[1][2] == 0 and expected[4][2] == 0
    assert expected[2][2] < 0

    assert read_cq_units(root / "OtherTopic" / "2" / file_name(0)) == [
        (other.append_result.wrote_offset, other.append_result.wrote_bytes, java_hash("TagB"))
    ]
    assert sorted(os.listdir(root)) == ["OtherTopic", "TopicTest"]
    assert store.get_min_offset_in_queue("TopicTest", 0) == 0
    assert store.get_max_offset_in_queue("TopicTest", 0) == len(tags)
    assert store.get_max_offset_in_queue("OtherTopic", 2) == 1
    assert store.get_max_offset_in_queue("OtherTopic", 0) == 0
    assert store.get_max_offset_in_queue("Nobody", 0) == 0
    for i, unit in enumerate(expected):
        assert store.get_commit_log_offset_in_queue("TopicTest", 0, i) == unit[0]


def test_consume_queue_rolls_files_named_by_byte_offset(store_factory: StoreFactory) -> None:
    units_per_file = 4
    store = store_factory(mapped_file_size_consume_queue=units_per_file * 20)
    expected = []
    for i in range(10):
        result = store.put_message(make_message(body=f"m{i}".encode(), tags=f"T{i % 3}"))
        assert result.append_result is not None
        expected.append(
            (
                result.append_result.wrote_offset,
                result.append_result.wrote_bytes,
                java_hash(f"T{i % 3}"),
            )
        )
    assert store.wait_for_dispatch()
    queue_dir = Path(store.config.consume_queue_dir) / "TopicTest" / "0"
    assert list_files(queue_dir) == [file_name(0), file_name(80), file_name(160)]
    for name in list_files(queue_dir):
        assert os.path.getsize(queue_dir / name) == 80
    units = [u for name in list_files(queue_dir) for u in read_cq_units(queue_dir / name)]
    assert units == expected
    assert store.get_max_offset_in_queue("TopicTest", 0) == 10
    assert store.get_min_offset_in_queue("TopicTest", 0) == 0
    store.shutdown()

    reopened = store_factory(mapped_file_size_consume_queue=units_per_file * 20)
    assert reopened.get_max_offset_in_queue("TopicTest", 0) == 10
    assert reopened.get_min_offset_in_queue("TopicTest", 0) == 0
    result = reopened.put_message(make_message(body=b"m10"))
    assert result.append_result is not None
    assert result.append_result.logics_offset == 10


@pytest.mark.parametrize("count", [1, 7, 8, 9, 15, 16, 17, 500])
def test_runs_packed_with_struct_and_with_numpy_are_alike(
    monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    """Short runs of units are packed with struct, long ones with numpy: the same bytes."""
    offsets = [4096 * i + 7 for i in range(count)]
    sizes = [200 + i for i in range(count)]
    # Negative codes (Java hashes) and ones past 32 bits (schedule delivery times).
    tags = [(-1) ** i * (2**40 + i) for i in range(count)]
    expected = b"".join(
        struct.pack(">qiq", *unit) for unit in zip(offsets, sizes, tags, strict=True)
    )
    monkeypatch.setattr(consume_queue, "_NUMPY_FROM", 0)
    assert consume_queue._pack_units(offsets, sizes, tags) == expected
    monkeypatch.setattr(consume_queue, "_NUMPY_FROM", count + 1)
    assert consume_queue._pack_units(offsets, sizes, tags) == expected


@pytest.mark.parametrize("count", [2, 9, 500])
def test_a_round_writes_the_same_units_with_struct_and_with_numpy(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, count: int
) -> None:
    """A batch dispatched in one round is one run of units, written at once by either
    packing."""
    files = []
    for numpy_from in (0, count + 1):
        monkeypatch.setattr(consume_queue, "_NUMPY_FROM", numpy_from)
        store = store_factory(tmp_path / str(numpy_from), start=False)
        messages = [
            Message("TopicTest", b"x" * i, 0, {"TAGS": f"Tag{i % 5}"}) for i in range(count)
        ]
        batch = MessageExtBatch(
            topic="TopicTest",
            queue_id=1,
            body=encode_batch_messages(messages),
            born_host=("10.1.2.3", 52000),
        )
        result = store.put_messages(batch)
        assert result.append_result is not None
        assert store.reput_message_service.do_reput() == count
        path = Path(store.config.consume_queue_dir) / "TopicTest" / "1" / file_name(0)
        units = read_cq_units(path)
        assert len(units) == count
        assert units[0][0] == result.append_result.wrote_offset
        assert [tags for _, _, tags in units] == [java_hash(f"Tag{i % 5}") for i in range(count)]
        files.append(path.read_bytes())
    assert files[0] == files[1]
