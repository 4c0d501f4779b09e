"""IndexFile / IndexService: file layout read from the bytes, and query_message."""

from __future__ import annotations

import itertools
import os
import struct
import threading
from pathlib import Path

import pytest

from orbitmq.common import message_const as mc
from orbitmq.common.file_system import OS_FILE_SYSTEM
from orbitmq.store import MessageStore, MessageStoreConfig, index_file
from orbitmq.store.index_file import IndexFile, index_file_size
from orbitmq.store.page_residency import mapping_address
from orbitmq.testing import ManualClock
from tests.component.store.records import INDEX_HEADER, java_hash, list_files, parse_record
from tests.conftest import StoreFactory
from tests.support import make_message

T0 = 1_700_000_000_000
FAR_FUTURE = 2**62


def _key_hash(full_key: str) -> int:
    h = abs(java_hash(full_key))
    return h if h <= 0x7FFFFFFF else 0


def _index_paths(store: MessageStore) -> list[Path]:
    return [Path(store.config.index_dir) / n for n in list_files(store.config.index_dir)]


def _put(store: MessageStore, **kwargs: object) -> int:
    result = store.put_message(make_message(**kwargs))  # type: ignore[arg-type]
    assert result.is_ok
    assert result.append_result is not None
    return result.append_result.wrote_offset


def _bodies(result_buffers: list[memoryview]) -> list[bytes]:
    return [parse_record(b).body for b in result_buffers]


def test_index_file_size_constants() -> None:
    assert index_file_size(5_000_000, 20_000_000) == 40 + 5_000_000 * 4 + 20_000_000 * 20
    assert index_file_size(5_000_000, 20_000_000) == 420_000_040
    config = MessageStoreConfig()
    assert (config.max_hash_slot_num, config.max_index_num) == (5_000_000, 20_000_000)
    assert index_file_size(config.max_hash_slot_num, config.max_index_num) == 420_000_040


@pytest.mark.parametrize("one_by_one_below", [0, 1000], ids=["numpy", "one-by-one"])
def test_header_slots_and_entries_after_puts(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch, one_by_one_below: int
) -> None:
    """The same file whether keys are put with numpy or one by one (small rounds)."""
    monkeypatch.setattr(index_file, "_ONE_BY_ONE_BELOW", one_by_one_below)
    clock = ManualClock(T0)
    slots, entries_max = 50, 200
    store = store_factory(clock=clock, max_hash_slot_num=slots, max_index_num=entries_max)
    plan = [("k0", 0), ("k1 k2", 1500), ("k0", 4200), ("k3", 9999)]
    written: list[tuple[int, int, int]] = []  # (key hash, phy offset, time diff s)
    offsets = []
    for keys, delta in plan:
        clock.set(T0 + delta)
        offset = _put(store, keys=keys, uniq_key=False)
        offsets.append(offset)
        for key in keys.split():
            written.append((_key_hash("TopicTest#" + key), offset, delta // 1000))
    assert store.wait_for_dispatch()

    (path,) = _index_paths(store)
    assert os.path.getsize(path) == index_file_size(slots, entries_max) == 40 + 200 + 4000
    data = path.read_bytes()
    begin_ts, end_ts, begin_phy, end_phy, slot_count, index_count = INDEX_HEADER.unpack_from(
        data, 0
    )
    assert begin_ts == T0
    assert end_ts == T0 + 9999
    assert begin_phy == offsets[0]
    assert end_phy == offsets[-1]
    assert index_count == 1 + len(written)  # entry 0 is never used
    assert slot_count == len({h % slots for h, _, _ in written})

    # Entries from 1 on, each chained to the previous entry of its slot.
    last_in_slot: dict[int, int] = {}
    entries_at = 40 + slots * 4
    for number, (key_hash, offset, diff) in enumerate(written, start=1):
        entry = struct.unpack_from(">iqii", data, entries_at + number * 20)
        assert entry == (key_hash, offset, diff, last_in_slot.get(key_hash % slots, 0))
        last_in_slot[key_hash % slots] = number
    for slot in range(slots):
        (value,) = struct.unpack_from(">i", data, 40 + slot * 4)
        assert value == last_in_slot.get(slot, 0)


@pytest.mark.parametrize("count", [1, 3, 7, 8, 9, 40])
def test_one_round_indexes_alike_with_numpy_and_one_by_one(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, count: int
) -> None:
    """A round's keys (three per record here) hashed and put with numpy or one by one: the
    same index file, byte for byte."""
    files = []
    for one_by_one_below in (0, 10**9):
        monkeypatch.setattr(index_file, "_ONE_BY_ONE_BELOW", one_by_one_below)
        clock = ManualClock(T0)
        store = store_factory(tmp_path / str(one_by_one_below), clock=clock, start=False)
        for i in range(count):
            clock.set(T0 + i * 700)
            _put(store, keys=f"k{i} shared clé{i}", uniq_key=False)
        assert store.reput_message_service.do_reput() == count
        (written,) = store.index_service.index_files
        assert written.index_count == 1 + 3 * count
        files.append(bytes(written.mapped_file.buffer))
    assert files[0] == files[1]


def test_query_by_keys_and_by_uniq_key(store_factory: StoreFactory) -> None:
    store = store_factory()
    first = make_message(body=b"first", keys="order-1 customer-9")
    second = make_message(body=b"second", keys="order-2 customer-9")
    third = make_message("OtherTopic", body=b"other", keys="order-1")
    offsets = []
    for msg in (first, second, third):
        result = store.put_message(msg)
        assert result.append_result is not None
        offsets.append(result.append_result.wrote_offset)
    assert store.wait_for_dispatch()

    assert _bodies(
        store.query_message("TopicTest", "order-1", 32, 0, FAR_FUTURE).message_buffers
    ) == [b"first"]
    # Newest first.
    both = store.query_message("TopicTest", "customer-9", 32, 0, FAR_FUTURE)
    assert _bodies(both.message_buffers) == [b"second", b"first"]
    assert both.buffer_total_size == sum(len(b) for b in both.message_buffers)
    # Keys of other topics are not returned.
    assert _bodies(
        store.query_message("OtherTopic", "order-1", 32, 0, FAR_FUTURE).message_buffers
    ) == [b"other"]
    assert store.query_message("OtherTopic", "customer-9", 32, 0, FAR_FUTURE).message_buffers == []
    assert store.query_message("TopicTest", "order-3", 32, 0, FAR_FUTURE).message_buffers == []

    uniq = second.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX]
    by_uniq = store.query_message("TopicTest", uniq, 32, 0, FAR_FUTURE)
    assert _bodies(by_uniq.message_buffers) == [b"second"]
    assert by_uniq.index_last_update_phy_offset == offsets[-1]


def test_query_within_a_time_range(store_factory: StoreFactory) -> None:
    clock = ManualClock(T0)
    store = store_factory(clock=clock)
    for i in range(6):
        clock.set(T0 + i * 10_000)
        _put(store, body=f"m{i}".encode(), keys="same")
    assert store.wait_for_dispatch()
    ranged = store.query_message("TopicTest", "same", 32, T0 + 20_000, T0 + 40_000)
    assert _bodies(ranged.message_buffers) == [b"m4", b"m3", b"m2"]
    assert ranged.index_last_update_timestamp == T0 + 50_000
    early = store.query_message("TopicTest", "same", 32, 0, T0 + 5_000)
    assert _bodies(early.message_buffers) == [b"m0"]
    assert (
        store.query_message("TopicTest", "same", 32, T0 + 60_000, FAR_FUTURE).message_buffers == []
    )


def test_query_max_count(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.config.default_query_max_num == 32
    assert store.config.max_msgs_num_batch == 64
    for i in range(70):
        _put(store, body=f"m{i:02d}".encode(), keys="popular")
    assert store.wait_for_dispatch()
    five = store.query_message("TopicTest", "popular", 5, 0, FAR_FUTURE)
    assert _bodies(five.message_buffers) == [f"m{i:02d}".encode() for i in range(69, 64, -1)]
    default = store.query_message("TopicTest", "popular", 0, 0, FAR_FUTURE)
    assert len(default.message_buffers) == 32
    assert _bodies(default.message_buffers)[0] == b"m69"
    capped = store.query_message("TopicTest", "popular", 1000, 0, FAR_FUTURE)
    assert len(capped.message_buffers) == 64
    assert _bodies(capped.message_buffers) == [f"m{i:02d}".encode() for i in range(69, 5, -1)]


def test_hash_collisions_are_rechecked_against_the_real_key(store_factory: StoreFactory) -> None:
    assert java_hash("Aa") == java_hash("BB")
    assert java_hash("TopicTest#Aa") == java_hash("TopicTest#BB")
    store = store_factory()
    _put(store, body=b"aa", keys="Aa", uniq_key=False)
    _put(store, body=b"bb", keys="BB", uniq_key=False)
    assert store.wait_for_dispatch()
    # The index itself cannot tell them apart...
    offsets, _, _ = store.index_service.query_offset("TopicTest", "Aa", 32, 0, FAR_FUTURE)
    assert len(offsets) == 2
    # ...the query does.
    assert _bodies(store.query_message("TopicTest", "Aa", 32, 0, FAR_FUTURE).message_buffers) == [
        b"aa"
    ]
    assert _bodies(store.query_message("TopicTest", "BB", 32, 0, FAR_FUTURE).message_buffers) == [
        b"bb"
    ]


def test_index_rolls_to_a_new_file_when_full(store_factory: StoreFactory) -> None:
    clock = ManualClock(T0)
    max_index_num = 10  # 9 usable entries (entry 0 is never used)
    store = store_factory(clock=clock, max_index_num=max_index_num)
    for i in range(12):  # 2 entries each (UNIQ_KEY and one key): 24 entries -> 3 files
        clock.set(T0 + i * 1000)
        _put(store, body=f"m{i}".encode(), keys=f"key-{i}")
    assert store.wait_for_dispatch()
    paths = _index_paths(store)
    assert len(paths) == 3
    headers = [INDEX_HEADER.unpack_from(p.read_bytes(), 0) for p in paths]
    assert [h[5] for h in headers] == [10, 10, 7]  # index counts: 9 + 9 + 6 entries
    assert all(os.path.getsize(p) == index_file_size(1000, max_index_num) for p in paths)
    # Files are in time order and each begins where the previous ended (or after).
    assert headers[0][0] == T0
    for earlier, later in itertools.pairwise(headers):
        assert later[0] >= earlier[1]
        assert later[2] >= earlier[3]
    for i in range(12):
        found = store.query_message("TopicTest", f"key-{i}", 32, 0, FAR_FUTURE)
        assert _bodies(found.message_buffers) == [f"m{i}".encode()], i


def test_keys_of_a_record_cut_between_two_index_files_by_a_crash_are_put_again(
    store_factory: StoreFactory,
) -> None:
    # 9 entries per file: m0..m3 take 8, m4's UNIQ_KEY the 9th; m4's key goes to file 2.
    clock = ManualClock(T0)
    store = store_factory(clock=clock, max_index_num=10)
    uniq_keys = []
    for i in range(5):
        clock.set(T0 + i * 1000)
        message = make_message(body=f"m{i}".encode(), keys=f"key-{i}")
        assert store.put_message(message).is_ok
        uniq_keys.append(message.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX])
    assert store.wait_for_dispatch()
    paths = _index_paths(store)
    assert len(paths) == 2
    store.shutdown()
    # A kill after file 1 filled and before file 2 got m4's key: file 2 never written, and
    # the abort file left behind.
    paths[1].unlink()
    (Path(store.config.store_path_root_dir) / "abort").touch()

    again = store_factory(clock=clock, max_index_num=10)
    assert again.wait_for_dispatch()

    for i in range(5):
        found = again.query_message("TopicTest", f"key-{i}", 32, 0, FAR_FUTURE)
        assert _bodies(found.message_buffers) == [f"m{i}".encode()], i
    # The key that was already there is not put twice.
    found = again.query_message("TopicTest", uniq_keys[4], 32, 0, FAR_FUTURE)
    assert _bodies(found.message_buffers) == [b"m4"]


def _writable_kib(address: int) -> int:
    """KiB of this process's mapping at ``address`` mapped in and dirty (/proc/self/smaps):
    pages a store already went to, or that were populated for writing. Pages only read
    (the index's repair at load reads the whole slot table) do not count."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for at, line in enumerate(lines):
        if line.split("-", 1)[0] == f"{address:x}":
            fields = dict(row.split(":", 1) for row in lines[at + 1 : at + 25] if ":" in row)
            return sum(int(fields[name].split()[0]) for name in ("Shared_Dirty", "Private_Dirty"))
    raise AssertionError(f"no mapping at {address:#x}")


def test_a_new_index_files_slot_table_is_mapped_in_off_the_dispatch_path(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    """Keys land on random hash slots: each put into a new file would fault a page of the
    table in, tens of microseconds of kernel time in a busy broker. The service populates
    the table once, on a thread of its own, when it creates the file."""
    probe = IndexFile(str(tmp_path / f"{0:020d}"), 1000, 10, OS_FILE_SYSTEM, create=True)
    populated = probe.populate_slots()
    probe.destroy()
    if not populated:
        pytest.skip("no MADV_POPULATE_WRITE (Linux before 5.14)")
    slots = 5_000_000  # RocketMQ's default: 19.5 MiB of slots
    store = store_factory(max_hash_slot_num=slots, max_index_num=1000)
    _put(store, keys="k1")
    assert store.wait_for_dispatch()
    _join_populating_threads()
    mapped = store.index_service.index_files[-1].mapped_file
    assert _writable_kib(mapping_address(mapped.buffer)) >= slots * 4 // 1024
    store.shutdown()

    # After a restart, the last file (keys go on into it) is populated again.
    again = store_factory(max_hash_slot_num=slots, max_index_num=1000)
    _join_populating_threads()
    mapped = again.index_service.index_files[-1].mapped_file
    assert _writable_kib(mapping_address(mapped.buffer)) >= slots * 4 // 1024


def _join_populating_threads() -> None:
    for thread in threading.enumerate():
        if thread.name == "IndexSlotPopulate":
            thread.join(10)
