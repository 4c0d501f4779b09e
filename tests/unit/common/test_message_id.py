"""Offset message ids and client unique ids (UNIQ_KEY, RocketMQ's MessageClientIDSetter)."""

from __future__ import annotations

import calendar
import datetime as dt
import os
import re
import threading
import time
import zoneinfo
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import (
    UniqueIdGenerator,
    create_message_id,
    decode_message_id,
    is_message_id_shaped,
)
from orbitmq.common.errors import MessageFormatError
from orbitmq.testing import ManualClock

# -- offset message id -----------------------------------------------------------------


def test_offset_message_id_ipv4_by_hand() -> None:
    # 10.0.0.1 -> 0A000001, port 10911 -> 00002A9F, offset 1234 -> 00000000000004D2
    msg_id = create_message_id(("10.0.0.1", 10911), 1234)
    assert msg_id == "0A00000100002A9F00000000000004D2"
    assert decode_message_id(msg_id) == (("10.0.0.1", 10911), 1234)


def test_offset_message_id_from_packed_host_bytes() -> None:
    packed = bytes([192, 168, 0, 255]) + (65535).to_bytes(4, "big")
    assert create_message_id(packed, 2**62) == "C0A800FF0000FFFF4000000000000000"


def test_offset_message_id_ipv6_is_56_digits() -> None:
    msg_id = create_message_id(("2001:db8::7", 10911), 255)
    assert msg_id == "20010DB8000000000000000000000007" + "00002A9F" + "00000000000000FF"
    assert len(msg_id) == 56
    assert decode_message_id(msg_id) == (("2001:db8::7", 10911), 255)


def test_lower_case_ids_decode_too() -> None:
    assert decode_message_id("0a00000100002a9f00000000000004d2") == (("10.0.0.1", 10911), 1234)


@settings(max_examples=200)
@given(
    st.ip_addresses().map(str),
    st.integers(0, 65535),
    st.integers(-(2**63), 2**63 - 1),
)
def test_offset_message_id_round_trip(ip: str, port: int, offset: int) -> None:
    msg_id = create_message_id((ip, port), offset)
    assert re.fullmatch(r"[0-9A-F]{32}" if "." in ip and ":" not in ip else r"[0-9A-F]{56}", msg_id)
    assert decode_message_id(msg_id) == ((ip, port), offset)


VALID = "0A00000100002A9F00000000000004D2"


@pytest.mark.parametrize(
    "bad",
    [
        "",
        VALID[:-1],
        VALID + "0",
        VALID + "00000000",  # 40 digits
        "G" * 32,
        "0x" + VALID[2:],
        "é" * 32,
        VALID[:-2] + "-1",
        VALID[:31] + "Z",
    ],
)
def test_invalid_offset_message_ids(bad: str) -> None:
    with pytest.raises(MessageFormatError):
        decode_message_id(bad)


@pytest.mark.parametrize(
    "bad",
    [
        VALID[:8] + " " + VALID[8:30] + " ",  # 32 characters, 30 hex digits
        VALID[:16] + " " * 16,
        "0A000001" + " " * 48,
    ],
    ids=["two-spaces", "half-spaces", "v6-length-spaces"],
)
def test_offset_message_ids_with_whitespace_are_format_errors(bad: str) -> None:
    # bytes.fromhex skips whitespace, so the length check alone does not reject these.
    with pytest.raises(MessageFormatError):
        decode_message_id(bad)


@pytest.mark.parametrize("pid", [1, 4242, 0x7FFF, 0x8000, 0xFFFF])
def test_a_unique_id_is_not_an_offset_message_id(pid: int) -> None:
    # Same length, but its "port" field holds the pid and random bits: out of 0..65535
    # (RocketMQ's decodeMessageId fails there too), never a made-up store address.
    uniq = UniqueIdGenerator(ip=bytes([127, 0, 0, 1]), pid=pid).create()
    with pytest.raises(MessageFormatError, match=r"is not an offset message id: its port"):
        decode_message_id(uniq)


def test_a_unique_id_of_a_pid_multiple_of_65536_still_decodes() -> None:
    # The one ambiguity RocketMQ has as well: a zero pid field is a valid port.
    uniq = UniqueIdGenerator(ip=bytes([127, 0, 0, 1]), pid=65536).create()
    (host, port), _offset = decode_message_id(uniq)
    assert host == "127.0.0.1" and 0 <= port <= 65535


@pytest.mark.parametrize(
    ("msg_id", "shaped"),
    [(VALID, True), ("0" * 56, True), (VALID.lower(), True), ("not-an-id", False), ("", False)],
)
def test_message_id_shape(msg_id: str, shaped: bool) -> None:
    assert is_message_id_shaped(msg_id) is shaped


# -- unique ids (UNIQ_KEY) -------------------------------------------------------------

IP = bytes([10, 1, 2, 3])
UNIQ_ID = re.compile(r"[0-9A-F]{32}")


@pytest.fixture
def local_tz(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], None]]:
    """Set the process's local time zone (month starts are local, as in Java's Calendar)."""

    def set_tz(name: str) -> None:
        monkeypatch.setenv("TZ", name)
        time.tzset()

    yield set_tz
    monkeypatch.undo()
    time.tzset()


def utc_ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> int:
    return calendar.timegm(dt.datetime(year, month, day, hour, minute, second).timetuple()) * 1000


def parts(uniq_id: str) -> tuple[str, str, str, int, int]:
    """ip, pid, random, ms since month start, counter of an IPv4 unique id."""
    return (
        uniq_id[:8],
        uniq_id[8:12],
        uniq_id[12:20],
        int(uniq_id[20:28], 16),
        int(uniq_id[28:32], 16),
    )


def test_layout_of_a_unique_id(local_tz: Callable[[str], None]) -> None:
    local_tz("UTC")
    clock = ManualClock(utc_ms(2024, 5, 3, 4, 5, 6) + 789)
    gen = UniqueIdGenerator(ip=IP, pid=0x12345, clock=clock)
    first = gen.create()
    assert UNIQ_ID.fullmatch(first)
    ip, pid, rand, since_month, counter = parts(first)
    assert ip == "0A010203"
    assert pid == "2345"  # the pid as a Java short: its low 16 bits
    assert re.fullmatch(r"[0-9A-F]{8}", rand)
    assert since_month == ((2 * 24 + 4) * 3600 + 5 * 60 + 6) * 1000 + 789
    assert counter == 0


def test_fixed_prefix_and_counter_increment(local_tz: Callable[[str], None]) -> None:
    local_tz("UTC")
    clock = ManualClock(utc_ms(2024, 5, 1))
    gen = UniqueIdGenerator(ip=IP, pid=7, clock=clock)
    ids = [gen.create() for _ in range(5)]
    assert len({i[:20] for i in ids}) == 1
    assert [parts(i)[4] for i in ids] == [0, 1, 2, 3, 4]
    assert all(parts(i)[3] == 0 for i in ids)


def test_time_field_follows_the_clock(local_tz: Callable[[str], None]) -> None:
    local_tz("UTC")
    clock = ManualClock(utc_ms(2024, 5, 1) + 1000)
    gen = UniqueIdGenerator(ip=IP, pid=7, clock=clock)
    assert parts(gen.create())[3] == 1000
    clock.advance(1234)
    assert parts(gen.create())[3] == 2234
    clock.advance(86_400_000)
    assert parts(gen.create())[3] == 86_402_234


def test_counter_wraps_at_16_bits(local_tz: Callable[[str], None]) -> None:
    local_tz("UTC")
    gen = UniqueIdGenerator(ip=IP, pid=7, clock=ManualClock(utc_ms(2024, 5, 1)))
    for _ in range(0xFFFF):
        gen.create()
    assert parts(gen.create())[4] == 0xFFFF
    assert parts(gen.create())[4] == 0


def test_month_rollover(local_tz: Callable[[str], None]) -> None:
    local_tz("UTC")
    clock = ManualClock(utc_ms(2024, 1, 31, 23, 59, 59) + 999)
    gen = UniqueIdGenerator(ip=IP, pid=7, clock=clock)
    assert parts(gen.create())[3] == 31 * 86_400_000 - 1
    clock.advance(1)  # 2024-02-01 00:00:00.000
    assert parts(gen.create())[3] == 0
    clock.set(utc_ms(2024, 2, 29, 23, 59, 59) + 999)  # a leap year's February
    assert parts(gen.create())[3] == 29 * 86_400_000 - 1
    clock.advance(1)
    assert parts(gen.create())[3] == 0
    clock.set(utc_ms(2024, 12, 31, 12))  # several months later, across a year
    assert parts(gen.create())[3] == 30 * 86_400_000 + 12 * 3_600_000
    clock.set(utc_ms(2025, 1, 1, 0, 0, 1))
    assert parts(gen.create())[3] == 1000


def test_month_start_is_local_midnight(local_tz: Callable[[str], None]) -> None:
    local_tz("Asia/Tokyo")  # UTC+9, no daylight saving time
    clock = ManualClock(utc_ms(2024, 4, 30, 15) + 5)  # 2024-05-01 00:00:00.005 in Tokyo
    assert parts(UniqueIdGenerator(ip=IP, pid=7, clock=clock).create())[3] == 5


def test_month_start_across_a_daylight_saving_change(local_tz: Callable[[str], None]) -> None:
    # Java's Calendar puts the start of the month at local midnight of the 1st with the offset
    # in force then: 2024-03-01 00:00 CET (UTC+1), although the clock now reads CEST (UTC+2).
    local_tz("Europe/Berlin")
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    now = dt.datetime(2024, 3, 31, 12, 0, tzinfo=berlin)
    month_start = dt.datetime(2024, 3, 1, 0, 0, tzinfo=berlin)
    now_ms = int(now.timestamp() * 1000)
    expected = now_ms - int(month_start.timestamp() * 1000)
    assert expected == (30 * 24 + 11) * 3_600_000
    gen = UniqueIdGenerator(ip=IP, pid=7, clock=ManualClock(now_ms))
    assert parts(gen.create())[3] == expected


def test_generators_differ_in_their_random_part() -> None:
    randoms = {parts(UniqueIdGenerator(ip=IP, pid=7).create())[2] for _ in range(20)}
    assert len(randoms) > 1


def test_default_ip_and_pid() -> None:
    uniq_id = UniqueIdGenerator().create()
    assert UNIQ_ID.fullmatch(uniq_id)
    assert parts(uniq_id)[1] == f"{os.getpid() & 0xFFFF:04X}"


def test_ipv6_ip_makes_a_longer_id() -> None:
    uniq_id = UniqueIdGenerator(ip=bytes(15) + b"\x01", pid=1).create()
    assert re.fullmatch(r"[0-9A-F]{56}", uniq_id)
    assert uniq_id.startswith("0" * 30 + "01" + "0001")


def test_ten_thousand_ids_are_unique() -> None:
    gen = UniqueIdGenerator(ip=IP, pid=7)
    ids = [gen.create() for _ in range(10_000)]
    assert len(set(ids)) == 10_000
    assert all(UNIQ_ID.fullmatch(i) for i in ids)


def test_unique_across_threads_on_a_frozen_clock() -> None:
    # With the clock standing still only the counter tells ids apart: it must not repeat.
    gen = UniqueIdGenerator(ip=IP, pid=7, clock=ManualClock(1_700_000_000_000))
    threads_n, per_thread = 8, 2_000
    results: list[list[str]] = [[] for _ in range(threads_n)]
    barrier = threading.Barrier(threads_n)

    def work(out: list[str]) -> None:
        barrier.wait()
        out.extend(gen.create() for _ in range(per_thread))

    threads = [threading.Thread(target=work, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    all_ids = [i for r in results for i in r]
    assert len(all_ids) == threads_n * per_thread
    assert len(set(all_ids)) == len(all_ids)
