"""Dispatch (reput): the arriving-message listener, lag and the confirm offset."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.common import java_string_hash, sys_flag
from orbitmq.store import GetMessageStatus, MessageStore, dispatch_batch
from tests.conftest import StoreFactory
from tests.support import make_message, small_config


class Arrivals:
    """Records listener calls and what was readable when each came."""

    def __init__(self) -> None:
        self.store: MessageStore | None = None
        self.calls: list[tuple[str, int, int]] = []
        self.tags_codes: list[frozenset[int]] = []
        self.readable_at_call: list[int] = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def __call__(
        self, topic: str, queue_id: int, max_offset: int, tags_codes: frozenset[int]
    ) -> None:
        assert self.store is not None
        readable = self.store.get_max_offset_in_queue(topic, queue_id)
        with self.changed:
            self.calls.append((topic, queue_id, max_offset))
            self.tags_codes.append(tags_codes)
            self.readable_at_call.append(readable)
            self.changed.notify_all()

    def wait_for(self, topic: str, queue_id: int, max_offset: int, timeout_s: float = 10) -> bool:
        with self.changed:
            return self.changed.wait_for(
                lambda: any(c[:2] == (topic, queue_id) and c[2] >= max_offset for c in self.calls),
                timeout_s,
            )


@pytest.fixture
def listened(tmp_path: Path) -> Iterator[tuple[MessageStore, Arrivals]]:
    arrivals = Arrivals()
    store = MessageStore(small_config(tmp_path / "store"), message_arriving_listener=arrivals)
    arrivals.store = store
    store.load()
    store.start()
    try:
        yield store, arrivals
    finally:
        store.shutdown()


def test_listener_hears_every_queue_with_its_new_max_offset(
    listened: tuple[MessageStore, Arrivals],
) -> None:
    store, arrivals = listened
    for i in range(3):
        message = make_message(body=f"a{i}".encode(), queue_id=0, tags=f"Tag{i % 2}")
        assert store.put_message(message).is_ok
    for i in range(2):
        assert store.put_message(make_message("OtherTopic", f"b{i}".encode(), queue_id=5)).is_ok
    assert arrivals.wait_for("TopicTest", 0, 3)
    assert arrivals.wait_for("OtherTopic", 5, 2)
    with arrivals.lock:
        calls = list(arrivals.calls)
        readable = list(arrivals.readable_at_call)
    assert {c[:2] for c in calls} == {("TopicTest", 0), ("OtherTopic", 5)}
    for topic, queue_id, final in (("TopicTest", 0, 3), ("OtherTopic", 5, 2)):
        offsets = [c[2] for c in calls if c[:2] == (topic, queue_id)]
        assert offsets == sorted(offsets)
        assert offsets[-1] == final
        assert all(1 <= o <= final for o in offsets)
    # Each announcement carries the tag codes (Java hash codes; 0 without tags) of what came.
    codes: dict[int, set[int]] = {0: set(), 5: set()}
    for (_topic, queue_id, _offset), tags_codes in zip(calls, arrivals.tags_codes, strict=True):
        codes[queue_id] |= tags_codes
    assert codes == {0: {java_string_hash("Tag0"), java_string_hash("Tag1")}, 5: {0}}
    # Each announcement came once the messages it announces were readable.
    for (_topic, _queue, max_offset), visible in zip(calls, readable, strict=True):
        assert visible >= max_offset
    got = store.get_message("g", "OtherTopic", 5, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    assert got.message_count == 2


def test_listener_called_by_a_manual_reput_round(tmp_path: Path) -> None:
    arrivals = Arrivals()
    store = MessageStore(small_config(tmp_path / "store"), message_arriving_listener=arrivals)
    arrivals.store = store
    store.load()  # services not started: dispatch only when asked
    try:
        for i in range(4):
            assert store.put_message(make_message(body=f"m{i}".encode(), queue_id=i % 2)).is_ok
        assert arrivals.calls == []
        assert store.reput_message_service.do_reput() == 4
        assert sorted(arrivals.calls) == [("TopicTest", 0, 2), ("TopicTest", 1, 2)]
        assert store.reput_message_service.do_reput() == 0
        assert len(arrivals.calls) == 2  # nothing new, nothing announced
    finally:
        store.shutdown()


def test_a_failing_listener_does_not_stop_dispatch(tmp_path: Path) -> None:
    def broken(topic: str, queue_id: int, max_offset: int, tags_codes: frozenset[int]) -> None:
        raise RuntimeError("listener bug")

    store = MessageStore(small_config(tmp_path / "store"), message_arriving_listener=broken)
    store.load()
    store.start()
    try:
        for i in range(3):
            assert store.put_message(make_message(body=f"m{i}".encode())).is_ok
        assert store.wait_for_dispatch()
        assert store.get_max_offset_in_queue("TopicTest", 0) == 3
    finally:
        store.shutdown()


def test_dispatch_behind_bytes_and_confirm_offset(store_factory: StoreFactory) -> None:
    store = store_factory(start=False)
    assert store.dispatch_behind_bytes == 0
    assert store.confirm_offset == 0
    written = 0
    for i in range(5):
        result = store.put_message(make_message(body=f"m{i}".encode()))
        assert result.append_result is not None
        written += result.append_result.wrote_bytes
    assert store.max_phy_offset == written
    assert store.dispatch_behind_bytes == written
    assert store.confirm_offset == 0
    # Not dispatched yet: not visible to consumers.
    assert store.get_message("g", "TopicTest", 0, 0, 32).message_count == 0
    assert not store.wait_for_dispatch(timeout_s=0.05)
    assert store.reput_message_service.do_reput() == 5
    assert store.dispatch_behind_bytes == 0
    assert store.confirm_offset == written == store.max_phy_offset
    assert store.wait_for_dispatch(timeout_s=0)
    assert store.get_message("g", "TopicTest", 0, 0, 32).message_count == 5


def test_running_dispatch_catches_up(store_factory: StoreFactory) -> None:
    store = store_factory()
    for i in range(200):
        assert store.put_message(make_message(body=f"m{i}".encode() * 10, queue_id=i % 4)).is_ok
    assert store.wait_for_dispatch()
    assert store.dispatch_behind_bytes == 0
    assert store.confirm_offset == store.max_phy_offset
    assert [store.get_max_offset_in_queue("TopicTest", q) for q in range(4)] == [50] * 4


def _log_bytes(store_factory: StoreFactory, count: int) -> bytes:
    store = store_factory()
    for i in range(count):
        tags = f"Tag{i % 3}" if i % 2 else None
        keys = f"k{i} other{i}" if i % 3 == 0 else None
        store.put_message(make_message(queue_id=i % 2, tags=tags, keys=keys, body=b"x" * i))
    data = store.commit_log.get_data(0)
    assert data is not None
    return bytes(data)


def _flip(data: bytes, at: int, mask: int) -> bytes:
    return data[:at] + bytes([data[at] ^ mask]) + data[at + 1 :]


@pytest.mark.parametrize(
    ("corrupt_at", "mask"),
    # PHYSICALOFFSET, SYSFLAG's born-host-is-IPv6 bit, BODYLEN, BODY (the CRC check)
    [(None, 0), (28 + 3, 0x40), (36 + 3, 0x10), (84, 0x40), (88, 0x01)],
)
def test_few_records_parse_alike_with_struct_and_with_numpy(
    store_factory: StoreFactory,
    monkeypatch: pytest.MonkeyPatch,
    corrupt_at: int | None,
    mask: int,
) -> None:
    """Rounds under ``_SCALAR_BELOW`` records read their fields with struct; the result must
    be what the numpy path gives, for valid records and for a record with a bad field."""
    data = _log_bytes(store_factory, 5)
    second = int.from_bytes(data[:4], "big")
    if corrupt_at is not None:
        data = _flip(data, second + corrupt_at, mask)
    view = memoryview(data)
    assert len(data) // second < dispatch_batch._SCALAR_BELOW
    scalar = dispatch_batch.parse_records(view, 0, check_crc=True)
    monkeypatch.setattr(dispatch_batch, "_SCALAR_BELOW", 0)
    vector = dispatch_batch.parse_records(view, 0, check_crc=True)
    assert (scalar.consumed, scalar.end_of_file, scalar.problem) == (
        vector.consumed,
        vector.end_of_file,
        vector.problem,
    )
    assert len(scalar.batch) == (5 if corrupt_at is None else 1)
    # The columns: every field but the batch's cached grouping.
    columns = [f.name for f in dataclasses.fields(dispatch_batch.DispatchBatch) if f.init]
    for field in columns:
        a, b = getattr(scalar.batch, field), getattr(vector.batch, field)
        assert type(a) is type(b) is list, field
        assert a == b, field
        # Plain ints from both paths, not numpy scalars that merely compare equal.
        assert [type(v) for v in a] == [type(v) for v in b], field


def test_a_last_record_whose_host_flags_point_past_the_data_stops_parsing(
    store_factory: StoreFactory,
) -> None:
    """Both IPv6 bits on a smallest record put BODYLEN after the readable bytes: a problem
    reported for that record, not an exception out of the reput thread."""
    data = bytearray(_log_bytes(store_factory, 1)[:100])
    data[0:4] = (100).to_bytes(4, "big")  # TOTALSIZE: a record that fits the window
    data[39] |= 0x30  # SYSFLAG: born host and store host IPv6, a 112-byte prefix
    parsed = dispatch_batch.parse_records(memoryview(bytes(data)), 0, check_crc=False)
    assert len(parsed.batch) == 0
    assert parsed.consumed == 0
    assert parsed.problem


def test_an_event_loops_small_put_dispatches_its_own_records(store_factory: StoreFactory) -> None:
    """The reput thread is not running: a single put on a loop is readable when
    ``async_put_message`` returns, because the loop dispatched it itself."""
    store = store_factory(start=False)

    async def put() -> None:
        result = await store.async_put_message(make_message(queue_id=1))
        assert result.is_ok

    asyncio.run(put())
    assert store.get_max_offset_in_queue("TopicTest", 1) == 1
    assert store.reput_message_service.behind_bytes == 0


def test_a_large_backlog_is_left_to_the_reput_thread(store_factory: StoreFactory) -> None:
    """Over 64 KiB waiting: the loop only wakes the (here stopped) reput thread."""
    store = store_factory(start=False)
    for _ in range(70):
        store.put_message(make_message(body=b"x" * 1024))

    async def put() -> None:
        assert (await store.async_put_message(make_message(queue_id=1))).is_ok

    asyncio.run(put())
    assert store.get_max_offset_in_queue("TopicTest", 1) == 0
    assert store.reput_message_service.do_reput() == 71
    assert store.get_max_offset_in_queue("TopicTest", 1) == 1


def test_only_plain_and_committed_records_are_visible() -> None:
    """Other SYSFLAG bits (here compression and multi tags) do not change what is shown."""
    kinds = [
        sys_flag.TRANSACTION_NOT_TYPE,
        sys_flag.TRANSACTION_PREPARED_TYPE,
        sys_flag.TRANSACTION_COMMIT_TYPE,
        sys_flag.TRANSACTION_ROLLBACK_TYPE,
    ]
    others = sys_flag.COMPRESSED_FLAG | sys_flag.MULTI_TAGS_FLAG
    flags = [kind | other for other in (0, others) for kind in kinds]
    batch = dispatch_batch.DispatchBatch(
        commit_log_offsets=[],
        sizes=[],
        queue_ids=[],
        queue_offsets=[],
        store_timestamps=[],
        sys_flags=flags,
        tags_codes=[],
        topics=[],
        keys=[],
        uniq_keys=[],
    )
    assert batch.visible() == [True, False, True, False] * 2
