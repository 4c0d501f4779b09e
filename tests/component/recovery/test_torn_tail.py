"""Torn tails and bit flips at the end of the commit log (issue 2, section 4 "Torn tail").

A store writes messages and shuts down cleanly; the test then damages the commit log files
directly and opens the store again. Recovery must cut the damaged tail and everything after
it, report how many bytes it cut, keep every record before it intact and readable, bring the
consume queues and the index back in line with the new end, and let new puts continue exactly
at the new end with the next queue offsets.

Every case runs on both recovery paths: abnormal (the abort file is present, every record's
CRC is checked) and normal (no abort file; the last files are scanned with
``check_crc_on_recover``, on by default).
"""

from __future__ import annotations

import random
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from orbitmq.common import MessageExt, decode_message, encode_message
from orbitmq.store import GetMessageStatus, MessageStore, PutMessageStatus, RecoveryReport
from tests.conftest import StoreFactory
from tests.support import make_message

FILE_SIZE = 32 * 1024
OVERRIDES = {
    "mapped_file_size_commit_log": FILE_SIZE,
    "mapped_file_size_consume_queue": 20 * 40,
    "max_hash_slot_num": 100,
    "max_index_num": 150,
}
TOPICS = ("TornTopic", "TornOther")
MESSAGES = 200
#: Where the body starts in a record whose hosts are IPv4 (RocketMQ's layout: 84 bytes of
#: fixed fields, then BODYLEN).
BODY_AT = 88
QUERY_END_MS = 2**62
PATHS = ("abnormal", "normal")


@dataclass(frozen=True, slots=True)
class Written:
    physical_offset: int
    size: int
    topic: str
    queue_id: int
    queue_offset: int
    key: str
    body: bytes


def _body(i: int) -> bytes:
    rng = random.Random(i)
    # No zero byte: a flipped bit never turns the body's last bytes into what a zeroed
    # file holds, and garbage cut inside the body always ends in a non-zero byte.
    return bytes(rng.randrange(1, 256) for _ in range(rng.randint(150, 600)))


def _put(
    store: MessageStore,
    topic: str,
    queue_id: int,
    body: bytes,
    key: str,
    *,
    tags: str | None = None,
    more_keys: str = "",
) -> Written:
    """Put one message keyed ``key`` and return where it was written."""
    result = store.put_message(
        make_message(topic, body, queue_id=queue_id, tags=tags, keys=key + more_keys)
    )
    assert result.status is PutMessageStatus.PUT_OK
    append = result.append_result
    assert append is not None
    return Written(
        append.wrote_offset, append.wrote_bytes, topic, queue_id, append.logics_offset, key, body
    )


def _write(store_factory: StoreFactory, root: Path) -> list[Written]:
    """MESSAGES messages over two topics of two queues, spanning several commit log, consume
    queue and index files; then a clean shutdown."""
    store = store_factory(root, **OVERRIDES)
    written = []
    for i in range(MESSAGES):
        topic, queue_id = TOPICS[i % 3 == 0], i % 2
        written.append(
            _put(
                store, topic, queue_id, _body(i), f"torn-{i}", tags=f"Tag{i % 4}", more_keys=" all"
            )
        )
    assert store.wait_for_dispatch()
    store.shutdown()
    assert not (root / "abort").exists()
    last = written[-1]
    assert last.physical_offset // FILE_SIZE >= 2, "the log should span at least three files"
    return written


def _commit_log_file(root: Path, offset: int) -> tuple[Path, int]:
    start = offset - offset % FILE_SIZE
    return root / "commitlog" / f"{start:020d}", offset - start


def _patch(root: Path, offset: int, change: Callable[[bytearray, int], None]) -> None:
    path, position = _commit_log_file(root, offset)
    data = bytearray(path.read_bytes())
    change(data, position)
    path.write_bytes(bytes(data))


def _flip(root: Path, offset: int, mask: int) -> None:
    def flip(data: bytearray, position: int) -> None:
        data[position] ^= mask

    _patch(root, offset, flip)


def _non_zero_span(root: Path, offset: int) -> int:
    """What cutting the log at ``offset`` removes: in every file from ``offset`` on, the bytes
    up to the file's last non-zero byte (zeros at the very end are indistinguishable from
    the zero-filled rest of a file)."""
    span = 0
    for path in sorted((root / "commitlog").iterdir()):
        start = int(path.name)
        if start + FILE_SIZE <= offset:
            continue
        data = path.read_bytes()[max(offset - start, 0) :]
        span += len(data.rstrip(b"\0"))
    return span


def _prepare_path(root: Path, path: str) -> None:
    if path == "abnormal":
        (root / "abort").touch()  # as if the process had died
    else:
        assert not (root / "abort").exists()


def _reopen(store_factory: StoreFactory, root: Path) -> tuple[MessageStore, RecoveryReport]:
    store = store_factory(root, **OVERRIDES)
    report = store.recovery_report
    assert report is not None
    return store, report


def _check_kept(store: MessageStore, kept: list[Written], report: RecoveryReport) -> None:
    """Every record before the cut is intact and readable, by queue offset and by key."""
    for w in kept:
        got = store.get_message("g", w.topic, w.queue_id, w.queue_offset, 1)
        assert got.status is GetMessageStatus.FOUND, (w, got.status, report)
        message = decode_message(got.message_buffers[0], check_crc=True)
        assert (message.commit_log_offset, message.body) == (w.physical_offset, w.body), w
        found = store.query_message(w.topic, w.key, 32, 0, QUERY_END_MS)
        offsets = [decode_message(b).commit_log_offset for b in found.message_buffers]
        assert offsets == [w.physical_offset], (w.key, offsets, report)


def _check_queues(store: MessageStore, kept: list[Written], valid: int) -> None:
    """Consume queues hold exactly the kept messages and point nowhere past the new end."""
    counts = Counter((w.topic, w.queue_id) for w in kept)
    for topic in TOPICS:
        for queue_id in (0, 1):
            expected = counts[(topic, queue_id)]
            assert store.get_max_offset_in_queue(topic, queue_id) == expected, (topic, queue_id)
            queue = store.find_consume_queue(topic, queue_id)
            assert queue is not None
            for index in range(expected):
                unit = queue.read_unit(index)
                assert unit is not None
                assert unit[0] + unit[1] <= valid, (topic, queue_id, index, unit, valid)
            assert queue.read_unit(expected) is None, (topic, queue_id, "a unit past the end")


def _check_dropped(store: MessageStore, dropped: list[Written], valid: int) -> None:
    """Dropped messages are gone from queue reads and from the index."""
    for w in dropped:
        got = store.get_message("g", w.topic, w.queue_id, w.queue_offset, 1)
        assert got.status is not GetMessageStatus.FOUND, (w, got.status)
        assert not store.query_message(w.topic, w.key, 32, 0, QUERY_END_MS).message_buffers, w
        offsets, _ts, _end = store.index_service.query_offset(w.topic, w.key, 32, 0, QUERY_END_MS)
        assert all(o < valid for o in offsets), (w.key, offsets, "index entries past the end")
    if dropped:
        offsets, _ts, _end = store.index_service.query_offset(
            dropped[0].topic, "all", 64, 0, QUERY_END_MS
        )
        assert all(o < valid for o in offsets), (offsets, valid)


def _check_tail_zero(root: Path, valid: int) -> None:
    path, position = _commit_log_file(root, valid)
    files = sorted((root / "commitlog").iterdir())
    if position == 0 and path not in files:
        assert files[-1].name < path.name
        return
    assert files[-1] == path, (files, path, "files past the new end must be gone")
    tail = path.read_bytes()[position:]
    assert tail.count(0) == len(tail), "non-zero bytes left after the new end"


def _check_puts_continue(store: MessageStore, kept: list[Written], valid: int) -> None:
    """A new put lands exactly at the new end with the next queue offset of its queue; more
    puts after it are dispatched, indexed and readable."""
    counts = Counter((w.topic, w.queue_id) for w in kept)
    first = store.put_message(make_message(TOPICS[0], b"after recovery", queue_id=1, keys="new-0"))
    assert first.status is PutMessageStatus.PUT_OK
    assert first.append_result is not None
    assert first.append_result.wrote_offset == valid
    assert first.append_result.logics_offset == counts[(TOPICS[0], 1)]
    expected = [(TOPICS[0], 1, counts[(TOPICS[0], 1)], "new-0", first.append_result.wrote_offset)]
    counts[(TOPICS[0], 1)] += 1
    for i in range(1, 40):
        topic, queue_id = TOPICS[i % 2], i % 2
        result = store.put_message(
            make_message(topic, _body(10_000 + i), queue_id=queue_id, keys=f"new-{i}")
        )
        assert result.status is PutMessageStatus.PUT_OK
        assert result.append_result is not None
        assert result.append_result.logics_offset == counts[(topic, queue_id)]
        expected.append(
            (
                topic,
                queue_id,
                counts[(topic, queue_id)],
                f"new-{i}",
                result.append_result.wrote_offset,
            )
        )
        counts[(topic, queue_id)] += 1
    assert store.wait_for_dispatch()
    for topic, queue_id, queue_offset, key, offset in expected:
        got = store.get_message("g", topic, queue_id, queue_offset, 1)
        assert got.status is GetMessageStatus.FOUND, (key, got.status)
        assert decode_message(got.message_buffers[0], check_crc=True).commit_log_offset == offset
        found = store.query_message(topic, key, 32, 0, QUERY_END_MS)
        offsets = [decode_message(b).commit_log_offset for b in found.message_buffers]
        assert offsets == [offset], (key, offsets, "a message put after recovery is not indexed")


def _check_recovered(
    store: MessageStore,
    root: Path,
    report: RecoveryReport,
    written: list[Written],
    kept_count: int,
    valid: int,
    truncated: int,
    path: str,
) -> None:
    assert report.abnormal is (path == "abnormal"), report
    assert report.valid_offset == valid, report
    assert report.truncated_bytes == truncated, report
    assert store.max_phy_offset == valid, report
    _check_tail_zero(root, valid)
    kept, dropped = written[:kept_count], written[kept_count:]
    _check_kept(store, kept, report)
    _check_queues(store, kept, valid)
    _check_dropped(store, dropped, valid)
    _check_puts_continue(store, kept, valid)


# -- (a) torn partial write after the last record ---------------------------------------------


def _next_record(written: list[Written], patched: bool = True) -> bytes:
    """The record the store would have written next, as a torn write leaves it partially.

    Not ``patched``: as the commit log copies a record before it fills in QUEUEOFFSET,
    PHYSICALOFFSET and STORETIMESTAMP (a kill between the two leaves it so).
    """
    last = written[-1]
    queue_offset = sum(1 for w in written if (w.topic, w.queue_id) == (TOPICS[0], 0))
    return encode_message(
        MessageExt(
            topic=TOPICS[0],
            body=bytes(range(1, 256)) * 24,  # 6120 bytes, none zero
            properties={"TAGS": "TagT", "KEYS": "torn-next"},
            queue_id=0,
            queue_offset=queue_offset if patched else 0,
            born_timestamp=1_700_000_000_000,
            born_host=("10.1.2.3", 52000),
            store_timestamp=1_700_000_000_001 if patched else 0,
            store_host=("127.0.0.1", 10911),
            commit_log_offset=last.physical_offset + last.size if patched else 0,
        )
    )


GARBAGE: dict[str, Callable[[list[Written]], bytes]] = {
    "first-30-bytes-of-a-record": lambda w: _next_record(w)[:30],
    "inside-magic-code": lambda w: _next_record(w)[:6],
    "inside-the-body": lambda w: _next_record(w)[: BODY_AT + 100],
    "random-bytes": lambda w: random.Random(7).randbytes(99) + b"\xff",
    # The record's first page never reached the disk, a later one did.
    "zeros-then-garbage": lambda w: bytes(4096) + _next_record(w)[4096 : 4096 + 50],
    # Complete, with a good body CRC, but its offsets were never filled in.
    "record-with-unpatched-offsets": lambda w: _next_record(w, patched=False),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("garbage_kind", sorted(GARBAGE))
def test_torn_write_after_the_last_record_is_cut(
    store_factory: StoreFactory, tmp_path: Path, garbage_kind: str, path: str
) -> None:
    root = tmp_path / "store"
    written = _write(store_factory, root)
    end = written[-1].physical_offset + written[-1].size
    garbage = GARBAGE[garbage_kind](written)

    def append_garbage(data: bytearray, position: int) -> None:
        assert position + len(garbage) <= FILE_SIZE
        assert data[position:].count(0) == len(data) - position
        data[position : position + len(garbage)] = garbage

    _patch(root, end, append_garbage)
    _prepare_path(root, path)
    # Zeros at the end of the garbage cannot be told from the zero-filled file: what was cut
    # is the garbage up to its last non-zero byte (all of it, except for the 30-byte prefix,
    # which ends inside the zero high bytes of PHYSICALOFFSET).
    expected_cut = len(garbage.rstrip(b"\0"))
    if garbage_kind != "first-30-bytes-of-a-record":
        assert expected_cut == len(garbage)
    assert _non_zero_span(root, end) == expected_cut

    store, report = _reopen(store_factory, root)
    if garbage[:8].strip(b"\0"):
        assert report.problem, report
    _check_recovered(store, root, report, written, MESSAGES, end, expected_cut, path)


# -- (b) bit flips in the body of the last records --------------------------------------------


def _last_file_first_index(written: list[Written]) -> int:
    last_file = written[-1].physical_offset // FILE_SIZE
    return next(i for i, w in enumerate(written) if w.physical_offset // FILE_SIZE == last_file)


#: Which records get a flipped body bit, as indexes into the written list.
BODY_FLIPS: dict[str, Callable[[list[Written]], list[int]]] = {
    "last-record": lambda w: [len(w) - 1],
    "each-of-the-last-3": lambda w: [len(w) - 3, len(w) - 2, len(w) - 1],
    "third-from-last-only": lambda w: [len(w) - 3],
    "first-record-of-the-last-file": lambda w: [_last_file_first_index(w)],
    "last-record-of-the-previous-file": lambda w: [_last_file_first_index(w) - 1],
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("flip_kind", sorted(BODY_FLIPS))
def test_body_bit_flip_drops_the_record_and_all_after_it(
    store_factory: StoreFactory, tmp_path: Path, flip_kind: str, path: str
) -> None:
    root = tmp_path / "store"
    written = _write(store_factory, root)
    flipped = BODY_FLIPS[flip_kind](written)
    for index in flipped:
        w = written[index]
        _flip(root, w.physical_offset + BODY_AT + len(w.body) // 2, 0x10)
    first = min(flipped)
    valid = written[first].physical_offset
    end = written[-1].physical_offset + written[-1].size
    expected_cut = _non_zero_span(root, valid)
    if valid // FILE_SIZE == end // FILE_SIZE:
        assert expected_cut == sum(w.size for w in written[first:]) == end - valid
    else:
        # The records of the previous file, its end-of-file blank record (TOTALSIZE and
        # MAGICCODE) and everything of the last file.
        assert expected_cut == written[first].size + 8 + end - end // FILE_SIZE * FILE_SIZE
    _prepare_path(root, path)

    store, report = _reopen(store_factory, root)
    assert "CRC" in report.problem, report
    _check_recovered(store, root, report, written, first, valid, expected_cut, path)


# -- (c) bit flips in TOTALSIZE or MAGICCODE of the last record -------------------------------

#: (byte within the record, bit mask) to flip.
HEADER_FLIPS = {
    "totalsize-low-bit": (3, 0x01),
    "totalsize-high-bit": (0, 0x40),
    "magiccode": (5, 0x08),
}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("field", sorted(HEADER_FLIPS))
def test_header_bit_flip_in_the_last_record_drops_it(
    store_factory: StoreFactory, tmp_path: Path, field: str, path: str
) -> None:
    root = tmp_path / "store"
    written = _write(store_factory, root)
    last = written[-1]
    byte, mask = HEADER_FLIPS[field]
    _flip(root, last.physical_offset + byte, mask)
    _prepare_path(root, path)
    assert _non_zero_span(root, last.physical_offset) == last.size

    store, report = _reopen(store_factory, root)
    assert report.problem, report
    _check_recovered(
        store, root, report, written, MESSAGES - 1, last.physical_offset, last.size, path
    )


def test_record_layout_assumed_by_the_flips(store_factory: StoreFactory, tmp_path: Path) -> None:
    """The offsets the flips aim at: TOTALSIZE at 0, MAGICCODE at 4, the body at 88."""
    root = tmp_path / "store"
    written = _write(store_factory, root)
    w = written[-1]
    path, position = _commit_log_file(root, w.physical_offset)
    record = path.read_bytes()[position : position + w.size]
    assert struct.unpack_from(">iI", record, 0) == (w.size, 0xDAA320A7)
    assert struct.unpack_from(">i", record, BODY_AT - 4)[0] == len(w.body)
    assert record[BODY_AT : BODY_AT + len(w.body)] == w.body


# -- files left empty by a kill while they were being created ---------------------------------
# A new segment file is created (open with O_CREAT) and only then given its size; a kill in
# between leaves a file of 0 bytes. The store must start again, and later write that file.


def _put_filler(store: MessageStore, topic: str, queue_id: int, count: int) -> list[Written]:
    out = [_put(store, topic, queue_id, _body(20_000 + i) * 4, f"fill-{i}") for i in range(count)]
    assert store.wait_for_dispatch()
    return out


def test_empty_commit_log_file_left_by_a_kill_is_recovered(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    written = _write(store_factory, root)
    end = written[-1].physical_offset + written[-1].size
    next_start = (end // FILE_SIZE + 1) * FILE_SIZE
    (root / "commitlog" / f"{next_start:020d}").touch()
    (root / "abort").touch()

    store, report = _reopen(store_factory, root)
    assert (report.abnormal, report.valid_offset, report.truncated_bytes) == (True, end, 0)
    _check_kept(store, written, report)
    # Write on, through the file that was left empty.
    more = _put_filler(store, TOPICS[1], 0, 2 * FILE_SIZE // 1000)
    assert more[0].physical_offset == end
    assert more[-1].physical_offset > next_start
    _check_kept(store, written + more, report)


def test_empty_consume_queue_file_left_by_a_kill_is_recovered(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    written = _write(store_factory, root)
    cq_file_size = OVERRIDES["mapped_file_size_consume_queue"]
    in_queue = sum(1 for w in written if (w.topic, w.queue_id) == (TOPICS[0], 0))
    next_start = (in_queue * 20 // cq_file_size + 1) * cq_file_size
    (root / "consumequeue" / TOPICS[0] / "0" / f"{next_start:020d}").touch()
    (root / "abort").touch()

    store, report = _reopen(store_factory, root)
    assert (report.abnormal, report.truncated_bytes) == (True, 0)
    _check_kept(store, written, report)
    # Write on in that queue, through the file that was left empty.
    more = _put_filler(store, TOPICS[0], 0, cq_file_size // 20 + 5)
    assert more[-1].queue_offset * 20 > next_start
    _check_kept(store, written + more, report)
