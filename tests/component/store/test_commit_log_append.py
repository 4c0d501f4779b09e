"""CommitLog appends through MessageStore: offsets, stored fields, end-of-file blank record,
batches and message ids, checked by decoding the bytes the store wrote."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from orbitmq.common import Message, MessageExtBatch, encode_batch_messages
from orbitmq.common import message_const as mc
from orbitmq.store import GetMessageStatus, MessageStore, PutMessageResult, PutMessageStatus
from orbitmq.testing import ManualClock
from tests.component.store.records import (
    BLANK_MAGIC,
    file_name,
    list_files,
    offset_msg_id,
    parse_record,
    read_commit_log,
)
from tests.conftest import StoreFactory
from tests.support import make_message, small_config

STORE_HOST = ("127.0.0.1", 10911)  # MessageStore's default store host
BORN_HOST = ("10.1.2.3", 52000)  # make_message's born host
T0 = 1_700_000_000_000


def _stored(store: MessageStore, result: PutMessageResult, index: int = 0) -> bytes:
    append = result.append_result
    assert append is not None
    offset = append.record_offsets[index]
    head = read_commit_log(
        store.config.commit_log_dir, offset, 4, store.config.mapped_file_size_commit_log
    )
    (size,) = struct.unpack(">i", head)
    return read_commit_log(
        store.config.commit_log_dir, offset, size, store.config.mapped_file_size_commit_log
    )


def _batch(
    topic: str,
    bodies: list[bytes],
    *,
    queue_id: int = 0,
    properties: dict[str, str] | None = None,
    item_properties: dict[str, str] | None = None,
) -> MessageExtBatch:
    items = [Message(topic, body, 0, dict(item_properties or {})) for body in bodies]
    return MessageExtBatch(
        topic=topic,
        body=encode_batch_messages(items),
        queue_id=queue_id,
        properties=dict(properties or {}),
        born_timestamp=T0 - 5,
        born_host=BORN_HOST,
    )


def test_single_puts_get_consecutive_queue_offsets_and_physical_offsets(
    store_factory: StoreFactory,
) -> None:
    clock = ManualClock(T0)
    store = store_factory(clock=clock)
    next_physical = 0
    offsets_by_queue: dict[tuple[str, int], int] = {}
    plan = [("TopicA", 0), ("TopicA", 0), ("TopicA", 1), ("TopicB", 0), ("TopicA", 0)]
    for i, (topic, queue_id) in enumerate(plan):
        clock.set(T0 + i * 1000)
        msg = make_message(topic, f"body-{i}".encode(), queue_id=queue_id, tags="T", keys="k")
        born = msg.born_timestamp
        result = store.put_message(msg)
        assert result.status is PutMessageStatus.PUT_OK
        append = result.append_result
        assert append is not None
        expected_queue_offset = offsets_by_queue.get((topic, queue_id), 0)
        offsets_by_queue[(topic, queue_id)] = expected_queue_offset + 1
        assert append.wrote_offset == next_physical
        assert append.logics_offset == expected_queue_offset
        assert append.store_timestamp == T0 + i * 1000
        assert append.msg_num == 1

        record = parse_record(_stored(store, result))
        assert record.total_size == append.wrote_bytes
        assert record.physical_offset == next_physical
        assert record.queue_offset == expected_queue_offset
        assert record.queue_id == queue_id
        assert record.topic == topic
        assert record.body == f"body-{i}".encode()
        assert record.store_timestamp == T0 + i * 1000
        assert record.born_timestamp == born
        assert record.store_host == STORE_HOST
        assert record.born_host == BORN_HOST
        assert record.properties[mc.PROPERTY_TAGS] == "T"
        assert record.properties[mc.PROPERTY_KEYS] == "k"
        assert append.msg_id == offset_msg_id(STORE_HOST, next_physical)
        next_physical += append.wrote_bytes
    assert store.max_phy_offset == next_physical


def test_store_host_is_written_into_every_record(tmp_path: Path) -> None:
    store = MessageStore(small_config(tmp_path / "store"), store_host=("192.168.7.9", 30911))
    store.load()
    store.start()
    try:
        result = store.put_message(make_message())
        assert result.is_ok
        record = parse_record(_stored(store, result))
        assert record.store_host == ("192.168.7.9", 30911)
        assert result.append_result is not None
        assert result.append_result.msg_id == offset_msg_id(("192.168.7.9", 30911), 0)
    finally:
        store.shutdown()


def test_record_that_does_not_fit_leaves_an_end_of_file_blank_and_starts_the_next_file(
    store_factory: StoreFactory,
) -> None:
    size = 4096
    store = store_factory(mapped_file_size_commit_log=size)
    body = b"x" * 900
    results = []
    while True:
        result = store.put_message(make_message(body=body))
        assert result.status is PutMessageStatus.PUT_OK
        results.append(result)
        assert result.append_result is not None
        if result.append_result.wrote_offset >= size:
            break
    last = results[-1].append_result
    previous = results[-2].append_result
    assert last is not None and previous is not None
    end_of_data = previous.wrote_offset + previous.wrote_bytes
    left = size - end_of_data
    assert 0 < left < last.wrote_bytes + 8  # it really did not fit
    # The rest of the first file is a blank record: TOTALSIZE = bytes left, MAGICCODE 0xCBD43194.
    blank = read_commit_log(store.config.commit_log_dir, end_of_data, 8, size)
    assert struct.unpack(">ii", blank) == (left, BLANK_MAGIC)
    assert struct.unpack(">I", blank[4:])[0] == 0xCBD43194
    # The message lands at the start of the next file.
    assert last.wrote_offset == size
    assert list_files(store.config.commit_log_dir) == [file_name(0), file_name(size)]
    record = parse_record(_stored(store, results[-1]))
    assert record.physical_offset == size
    assert record.queue_offset == len(results) - 1
    # Readers skip the blank: every message comes back in order.
    assert store.wait_for_dispatch()
    got = store.get_message("g", "TopicTest", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    assert got.message_queue_offsets == list(range(len(results)))
    assert [parse_record(b).physical_offset for b in got.message_buffers] == [
        r.append_result.wrote_offset for r in results if r.append_result is not None
    ]


def test_batch_gets_consecutive_offsets_and_batch_properties_on_every_message(
    store_factory: StoreFactory,
) -> None:
    clock = ManualClock(T0)
    store = store_factory(clock=clock)
    first = store.put_message(make_message("TopicB", b"single", queue_id=3))
    assert first.status is PutMessageStatus.PUT_OK
    other_queue = store.put_message(make_message("TopicB", b"other", queue_id=4))
    assert other_queue.append_result is not None
    assert other_queue.append_result.logics_offset == 0

    clock.set(T0 + 777)
    bodies = [b"b0", b"b1-longer", b"b2"]
    batch = _batch(
        "TopicB",
        bodies,
        queue_id=3,
        properties={"BATCH_PROP": "yes"},
        item_properties={mc.PROPERTY_TAGS: "TagX"},
    )
    result = store.put_messages(batch)
    assert result.status is PutMessageStatus.PUT_OK
    append = result.append_result
    assert append is not None
    assert append.msg_num == 3
    assert append.logics_offset == 1
    assert append.store_timestamp == T0 + 777
    assert len(append.record_offsets) == 3
    assert first.append_result is not None and other_queue.append_result is not None
    start = other_queue.append_result.wrote_offset + other_queue.append_result.wrote_bytes
    assert append.wrote_offset == start == append.record_offsets[0]

    expected_physical = start
    for i, body in enumerate(bodies):
        record = parse_record(_stored(store, result, i))
        assert record.physical_offset == expected_physical == append.record_offsets[i]
        assert record.queue_offset == 1 + i
        assert record.queue_id == 3
        assert record.topic == "TopicB"
        assert record.body == body
        assert record.store_timestamp == T0 + 777
        assert record.store_host == STORE_HOST
        assert record.born_host == BORN_HOST
        assert record.properties == {mc.PROPERTY_TAGS: "TagX", "BATCH_PROP": "yes"}
        expected_physical += record.total_size
    assert expected_physical == start + append.wrote_bytes

    # msg_id: the offset message id of every record, comma-separated.
    assert append.msg_id == ",".join(offset_msg_id(STORE_HOST, o) for o in append.record_offsets)
    assert append.msg_id.count(",") == 2

    after = store.put_message(make_message("TopicB", b"after", queue_id=3))
    assert after.append_result is not None
    assert after.append_result.logics_offset == 4
    assert after.append_result.wrote_offset == start + append.wrote_bytes


def test_batch_that_does_not_fit_goes_whole_to_the_next_file(store_factory: StoreFactory) -> None:
    size = 4096
    store = store_factory(mapped_file_size_commit_log=size)
    filler = store.put_message(make_message(body=b"f" * 3000))
    assert filler.is_ok
    result = store.put_messages(_batch("TopicTest", [b"a" * 300, b"b" * 300, b"c" * 300]))
    assert result.status is PutMessageStatus.PUT_OK
    append = result.append_result
    assert append is not None
    assert append.record_offsets[0] == size
    assert append.logics_offset == 1
    assert filler.append_result is not None
    end = filler.append_result.wrote_bytes
    blank = read_commit_log(store.config.commit_log_dir, end, 8, size)
    assert struct.unpack(">ii", blank) == (size - end, BLANK_MAGIC)
    records = [parse_record(_stored(store, result, i)) for i in range(3)]
    assert [r.queue_offset for r in records] == [1, 2, 3]
    assert [r.physical_offset for r in records] == append.record_offsets


def test_batch_of_1000_messages_reads_back_in_order_over_several_reads(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    head = store.put_message(make_message(body=b"head"))
    assert head.is_ok
    bodies = [f"m{i:04d}".encode() for i in range(1000)]
    result = store.put_messages(_batch("TopicTest", bodies))
    assert result.status is PutMessageStatus.PUT_OK
    append = result.append_result
    assert append is not None
    assert append.msg_num == 1000
    assert append.logics_offset == 1
    assert len(append.msg_id.split(",")) == 1000
    assert store.wait_for_dispatch()
    assert store.get_max_offset_in_queue("TopicTest", 0) == 1001

    read_bodies: list[bytes] = []
    read_offsets: list[int] = []
    offset = 1
    calls = 0
    while offset < 1001:
        got = store.get_message("g", "TopicTest", 0, offset, 1000)
        assert got.status is GetMessageStatus.FOUND
        assert got.message_count <= store.config.max_transfer_count_on_message_in_memory
        assert got.next_begin_offset == offset + got.message_count
        records = [parse_record(b) for b in got.message_buffers]
        read_bodies += [r.body for r in records]
        read_offsets += [r.queue_offset for r in records]
        assert read_offsets[-got.message_count :] == got.message_queue_offsets
        offset = got.next_begin_offset
        calls += 1
    assert read_bodies == bodies
    assert read_offsets == list(range(1, 1001))
    assert calls >= 1000 // 32
    end = store.get_message("g", "TopicTest", 0, 1001, 32)
    assert end.status is GetMessageStatus.OFFSET_OVERFLOW_ONE


def test_body_crc_is_zlib_crc32_without_the_sign_bit_for_every_size(
    store_factory: StoreFactory,
) -> None:
    # The store computes BODYCRC with ISA-L's CRC32; RocketMQ's is java.util.zip.CRC32.
    # zlib is the independent reference here (recovery checks with the store's own).
    store = store_factory()
    sizes = [0, 1, 3, 15, 16, 17, 63, 64, 65, 255, 1024, 4095, 4096, 4097, 65_000]
    bodies = [bytes((i * 131 + n) % 256 for i in range(n)) for n in sizes]
    for body in bodies:
        stored = parse_record(_stored(store, store.put_message(make_message(body=body))))
        assert stored.body_crc == zlib.crc32(body) & 0x7FFFFFFF
    result = store.put_messages(_batch("TopicTest", bodies[:-1]))
    for index, body in enumerate(bodies[:-1]):
        assert parse_record(_stored(store, result, index)).body_crc == (
            zlib.crc32(body) & 0x7FFFFFFF
        )
