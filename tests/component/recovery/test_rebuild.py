"""Rebuilding consume queues and index from the commit log (issue 2, section 4 "Rebuild"), and
the checkpoint file's layout (section 3 "Checkpoint").

The commit log is the truth: consume queues and index files are derived from it, so deleting
them and loading the store again must give the very same bytes in the very same files.
"""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from orbitmq.common import (
    OS_FILE_SYSTEM,
    Message,
    MessageExtBatch,
    decode_message,
    encode_batch_messages,
)
from orbitmq.common import message_const as mc
from orbitmq.store import (
    FlushDiskType,
    GetMessageStatus,
    MessageStore,
    PutMessageStatus,
    StoreCheckpoint,
)
from orbitmq.testing import ManualClock
from tests.conftest import StoreFactory
from tests.support import make_message

OVERRIDES = {
    "mapped_file_size_commit_log": 64 * 1024,
    "mapped_file_size_consume_queue": 20 * 40,
    "max_hash_slot_num": 500,
    "max_index_num": 3000,
}
TOPICS = tuple(f"RebuildTopic{i}" for i in range(6))
QUEUES = 4
MESSAGES = 3000
QUERY_END_MS = 2**62
DERIVED = ("consumequeue", "index")


@dataclass(frozen=True, slots=True)
class Sent:
    topic: str
    queue_id: int
    queue_offset: int
    physical_offset: int
    keys: tuple[str, ...]
    uniq_key: str
    body: bytes


def _keys(i: int) -> tuple[str, ...]:
    # One key naming the message alone, two shared with others.
    return (f"k{i}", f"group{i % 13}", f"decade{i // 10}")


def _body(i: int) -> bytes:
    rng = random.Random(i)
    return f"message {i} ".encode() + rng.randbytes(rng.randint(20, 400))


def _put_single(store: MessageStore, i: int, topic: str, queue_id: int) -> list[Sent]:
    msg = make_message(
        topic, _body(i), queue_id=queue_id, tags=f"Tag{i % 5}", keys=" ".join(_keys(i))
    )
    result = store.put_message(msg)
    assert result.status is PutMessageStatus.PUT_OK
    append = result.append_result
    assert append is not None
    uniq = msg.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
    return [
        Sent(topic, queue_id, append.logics_offset, append.wrote_offset, _keys(i), uniq, _body(i))
    ]


def _put_batch(
    store: MessageStore, first: int, count: int, topic: str, queue_id: int
) -> list[Sent]:
    items = []
    for i in range(first, first + count):
        template = make_message(topic, _body(i), tags=f"Tag{i % 5}", keys=" ".join(_keys(i)))
        items.append(Message(topic, template.body, 0, template.properties))
    batch = MessageExtBatch(
        topic=topic,
        body=encode_batch_messages(items),
        queue_id=queue_id,
        born_timestamp=1_700_000_000_000 + first,
        born_host=("10.1.2.3", 52000),
    )
    result = store.put_message(batch)
    assert result.status is PutMessageStatus.PUT_OK
    append = result.append_result
    assert append is not None
    return [
        Sent(
            topic,
            queue_id,
            append.logics_offset + n,
            offset,
            _keys(first + n),
            items[n].properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX],
            items[n].body,
        )
        for n, offset in enumerate(append.record_offsets)
    ]


def _write_corpus(store: MessageStore) -> list[Sent]:
    """MESSAGES messages over 6 topics x 4 queues, singles and batches, each with tags, three
    keys and a UNIQ_KEY."""
    sent: list[Sent] = []
    put = 0
    while len(sent) < MESSAGES:
        topic, queue_id = TOPICS[put % len(TOPICS)], (put // len(TOPICS)) % QUEUES
        if put % 10 == 9:
            sent += _put_batch(store, len(sent), 5, topic, queue_id)
        else:
            sent += _put_single(store, len(sent), topic, queue_id)
        put += 1
    assert store.wait_for_dispatch()
    return sent


def _snapshot(root: Path, parts: tuple[str, ...] = DERIVED) -> dict[str, bytes]:
    """Relative path -> bytes of every file under ``parts`` of the store root."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for part in parts
        for path in sorted((root / part).rglob("*"))
        if path.is_file()
    }


def _assert_identical(before: dict[str, bytes], after: dict[str, bytes]) -> None:
    assert sorted(after) == sorted(before), (
        f"missing: {sorted(set(before) - set(after))}, extra: {sorted(set(after) - set(before))}"
    )
    differing = []
    for path, data in before.items():
        rebuilt = after[path]
        if rebuilt != data:
            first = next(
                (i for i, (a, b) in enumerate(zip(data, rebuilt, strict=False)) if a != b),
                min(len(data), len(rebuilt)),
            )
            differing.append(
                f"{path} (sizes {len(data)}/{len(rebuilt)}, first difference at {first})"
            )
    assert not differing, f"{len(differing)} rebuilt file(s) differ: {differing[:10]}"


def _written_store(store_factory: StoreFactory, root: Path) -> tuple[list[Sent], dict[str, bytes]]:
    store = store_factory(root, **OVERRIDES)
    sent = _write_corpus(store)
    store.shutdown()
    assert not (root / "abort").exists()
    snapshot = _snapshot(root)
    # The corpus is big enough that every kind of file rolled.
    assert len(list((root / "commitlog").iterdir())) >= 3
    queue_files = [p for p in snapshot if p.startswith("consumequeue/")]
    assert len(queue_files) >= 2 * len(TOPICS) * QUEUES
    assert len([p for p in snapshot if p.startswith("index/")]) >= 2
    return sent, snapshot


def _check_reads(store: MessageStore, sent: list[Sent]) -> None:
    """Queue reads and key queries over the rebuilt files."""
    for s in sent[:: len(sent) // 300]:
        got = store.get_message("g", s.topic, s.queue_id, s.queue_offset, 1)
        assert got.status is GetMessageStatus.FOUND, s
        message = decode_message(got.message_buffers[0], check_crc=True)
        assert (message.commit_log_offset, message.body) == (s.physical_offset, s.body)
        for key in (s.keys[0], s.uniq_key):
            found = store.query_message(s.topic, key, 32, 0, QUERY_END_MS)
            offsets = [decode_message(b).commit_log_offset for b in found.message_buffers]
            assert offsets == [s.physical_offset], (key, offsets)
    # A key shared by several messages of a topic finds all of them (fewer than 32 here).
    topic = TOPICS[0]
    expected = sorted(s.physical_offset for s in sent if s.topic == topic and "decade7" in s.keys)
    found = store.query_message(topic, "decade7", 32, 0, QUERY_END_MS)
    assert expected
    assert sorted(decode_message(b).commit_log_offset for b in found.message_buffers) == expected


def test_deleting_consume_queues_and_index_rebuilds_them_byte_identical(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    sent, before = _written_store(store_factory, root)
    for part in DERIVED:
        shutil.rmtree(root / part)

    store = store_factory(root, **OVERRIDES)
    report = store.recovery_report
    assert report is not None
    assert (report.abnormal, report.truncated_bytes, report.reput_from_offset) == (False, 0, 0)
    assert store.wait_for_dispatch()
    _check_reads(store, sent)
    store.shutdown()
    _assert_identical(before, _snapshot(root))


def test_deleting_only_consume_queues_rebuilds_them_byte_identical(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    sent, before = _written_store(store_factory, root)
    shutil.rmtree(root / "consumequeue")

    store = store_factory(root, **OVERRIDES)
    assert store.wait_for_dispatch()
    _check_reads(store, sent)
    store.shutdown()
    _assert_identical(before, _snapshot(root))


def test_abnormal_recovery_of_an_intact_store_changes_nothing(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    sent, before = _written_store(store_factory, root)
    log_before = _snapshot(root, ("commitlog",))
    end = max(s.physical_offset for s in sent)
    (root / "abort").touch()

    store = store_factory(root, **OVERRIDES)
    report = store.recovery_report
    assert report is not None
    assert report.abnormal
    assert (report.truncated_bytes, report.problem) == (0, ""), report
    assert report.valid_offset == store.max_phy_offset > end, report
    assert store.wait_for_dispatch()
    _check_reads(store, sent)
    for topic in TOPICS:
        for queue_id in range(QUEUES):
            count = sum(1 for s in sent if (s.topic, s.queue_id) == (topic, queue_id))
            assert store.get_max_offset_in_queue(topic, queue_id) == count
    store.shutdown()
    _assert_identical(before, _snapshot(root))
    _assert_identical(log_before, _snapshot(root, ("commitlog",)))


def test_checkpoint_file_layout(store_factory: StoreFactory, tmp_path: Path) -> None:
    """4096 bytes; physicMsgTimestamp, logicsMsgTimestamp and indexMsgTimestamp as big-endian
    int64 at 0, 8 and 16 (RocketMQ's StoreCheckpoint), holding stored messages' times."""
    root = tmp_path / "store"
    clock = ManualClock(1_790_000_000_000)
    store = store_factory(root, clock=clock, flush_disk_type=FlushDiskType.SYNC_FLUSH, **OVERRIDES)
    stamps = []
    for i in range(60):
        clock.advance(1000)
        # The last three have no key and no UNIQ_KEY: the index ends before the log does.
        keyed = i < 57
        result = store.put_message(
            make_message(
                TOPICS[i % 2],
                _body(i),
                queue_id=i % 3,
                keys=f"k{i}" if keyed else None,
                uniq_key=keyed,
            )
        )
        assert result.status is PutMessageStatus.PUT_OK
        assert result.append_result is not None
        stamps.append(result.append_result.store_timestamp)
    assert stamps == [1_790_000_000_000 + 1000 * (i + 1) for i in range(60)]
    assert store.wait_for_dispatch()
    store.shutdown()

    data = (root / "checkpoint").read_bytes()
    assert len(data) == 4096
    physic, logics, index = struct.unpack_from(">qqq", data, 0)
    # The store time of a message known to be synced: SYNC_FLUSH synced every one.
    assert stamps[0] <= physic <= stamps[-1], (physic, stamps)
    # Consume queues were flushed up to the last dispatched message at shutdown, the index
    # up to the last message with a key.
    assert (logics, index) == (stamps[-1], stamps[-4])
    # The timestamps really are the stored messages' STORETIMESTAMP fields.
    reopened = store_factory(root, **OVERRIDES)
    stored = [
        reopened.get_message_store_timestamp(TOPICS[i % 2], i % 3, offset)
        for i, offset in _queue_offsets(60)
    ]
    assert stored == stamps
    checkpoint = reopened.checkpoint
    assert (
        checkpoint.physic_msg_timestamp,
        checkpoint.logics_msg_timestamp,
        checkpoint.index_msg_timestamp,
    ) == (physic, logics, index)


def test_checkpoint_fields_are_read_and_written_at_rocketmq_offsets(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint"
    checkpoint = StoreCheckpoint(str(path), OS_FILE_SYSTEM)
    checkpoint.load()
    checkpoint.physic_msg_timestamp = 0x0102030405060708
    checkpoint.logics_msg_timestamp = 0x1112131415161718
    checkpoint.index_msg_timestamp = 0x2122232425262728
    checkpoint.shutdown()
    data = path.read_bytes()
    assert len(data) == 4096
    assert data[:24] == bytes.fromhex("0102030405060708 1112131415161718 2122232425262728")

    path.write_bytes(struct.pack(">qqq", 1_790_000_000_001, 1_790_000_000_002, 3) + bytes(4072))
    reread = StoreCheckpoint(str(path), OS_FILE_SYSTEM)
    reread.load()
    assert (
        reread.physic_msg_timestamp,
        reread.logics_msg_timestamp,
        reread.index_msg_timestamp,
    ) == (1_790_000_000_001, 1_790_000_000_002, 3)
    reread.shutdown()


def _queue_offsets(count: int) -> list[tuple[int, int]]:
    """(message number, queue offset) of messages put to (TOPICS[i % 2], i % 3) in order."""
    seen: dict[tuple[int, int], int] = {}
    result = []
    for i in range(count):
        key = (i % 2, i % 3)
        result.append((i, seen.get(key, 0)))
        seen[key] = seen.get(key, 0) + 1
    return result


def test_empty_index_file_left_by_a_kill_does_not_index_messages_twice(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    """A kill right after the next index file was created (before a key went in) leaves an
    empty index file last. Recovery dispatches the commit log again from where its scan
    began; messages already in the older index files must not be indexed a second time."""
    root = tmp_path / "store"
    sent, _before = _written_store(store_factory, root)
    names = sorted(p.name for p in (root / "index").iterdir())
    size = 40 + OVERRIDES["max_hash_slot_num"] * 4 + OVERRIDES["max_index_num"] * 20
    (root / "index" / str(int(names[-1]) + 1)).write_bytes(bytes(size))
    (root / "abort").touch()

    store = store_factory(root, **OVERRIDES)
    report = store.recovery_report
    assert report is not None
    assert report.abnormal
    assert store.wait_for_dispatch()
    _check_reads(store, sent)


#: A writer that dies (as under kill -9) inside an index update: after the new entries and the
#: slots pointing to them were written, before the file's header counts them.
_DIE_INSIDE_AN_INDEX_UPDATE = """
import os
import sys

from orbitmq.store import MessageStore, index_file
from tests.support import make_message, small_config

store = MessageStore(small_config(sys.argv[1], max_hash_slot_num=50, max_index_num=3000))
store.load()
store.start()
for i in range(300):
    store.put_message(make_message("IndexTopic", b"x" * 100, keys=f"k{i}"))
assert store.wait_for_dispatch()

write_header = index_file.IndexFile._write_header
#: Entry ids start at 1; each message indexes its UNIQ_KEY and its one key.
ALL_KEYS_IN = 1 + 2 * 306


def die(self):
    # Dies in the header write of the round that put the last key, whichever puts that round
    # holds (a round may start while the puts go on: a put's write releases the GIL).
    if self.index_count >= ALL_KEYS_IN:
        os._exit(9)
    write_header(self)


index_file.IndexFile._write_header = die
for i in range(300, 306):
    store.put_message(make_message("IndexTopic", b"y" * 100, keys=f"k{i}"))
store.wait_for_dispatch(5)
os._exit(0)
"""


def test_kill_inside_an_index_update_loses_no_key(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    """Few hash slots, so most new keys share a slot with older ones: re-indexing the
    interrupted update must not cut the older entries out of their slot's chain."""
    root = tmp_path / "store"
    child = subprocess.run(
        [sys.executable, "-c", _DIE_INSIDE_AN_INDEX_UPDATE, str(root)],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        check=False,
    )
    assert child.returncode == 9, f"the writer did not die in the index update: {child.stderr}"

    store = store_factory(root, max_hash_slot_num=50, max_index_num=3000)
    report = store.recovery_report
    assert report is not None
    assert report.abnormal
    assert store.wait_for_dispatch()
    lost = [
        i
        for i in range(306)
        if len(store.query_message("IndexTopic", f"k{i}", 32, 0, QUERY_END_MS).message_buffers) != 1
    ]
    assert not lost, f"{len(lost)} key(s) not found exactly once after recovery: {lost[:40]}"
