"""The timer store's files, byte for byte: 52-byte timer log units, 32-byte wheel slots,
the 56-byte timercheck (RocketMQ 5's layouts)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from orbitmq.common.file_system import OS_FILE_SYSTEM
from orbitmq.store.errors import StoreError
from orbitmq.store.timer import TimerCheckpoint, TimerLog, TimerUnit, TimerWheel


def test_timer_log_unit_layout_and_append(tmp_path: Path) -> None:
    timer_log = TimerLog(str(tmp_path / "timerlog"), 52 * 10, OS_FILE_SYSTEM)
    assert timer_log.load(0) == 0
    unit = TimerUnit(-1, 1_000, 250, 4096, 180, topic_hash=7)
    assert timer_log.append(unit) == 0
    assert timer_log.append(TimerUnit(0, 1_010, 240, 8192, 90)) == 52
    raw = (tmp_path / "timerlog" / "00000000000000000000").read_bytes()[:52]
    assert struct.unpack(">iqiqiqiiq", raw) == (52, -1, 1, 1_000, 250, 4096, 180, 7, 0)
    assert timer_log.read(52) == TimerUnit(0, 1_010, 240, 8192, 90)
    assert timer_log.read(52).due_ms == 1_250  # type: ignore[union-attr]
    assert timer_log.read(104) is None  # beyond the end
    for i in range(9):
        timer_log.append(TimerUnit(-1, i, 1, 1, 1))
    assert timer_log.end == 52 * 11  # a second file: units never span two
    timer_log.shutdown()


def test_timer_log_load_cuts_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "timerlog"
    timer_log = TimerLog(str(path), 52 * 100, OS_FILE_SYSTEM)
    timer_log.load(0)
    for i in range(3):
        timer_log.append(TimerUnit(-1, i, 1, 100, 10))
    timer_log.shutdown()
    file = path / "00000000000000000000"
    data = bytearray(file.read_bytes())
    data[104 + 20 : 104 + 30] = b"\xff" * 10  # a torn third unit: its size field survives
    data[104:108] = b"\x00\x00\x00\x07"
    file.write_bytes(bytes(data))
    reopened = TimerLog(str(path), 52 * 100, OS_FILE_SYSTEM)
    assert reopened.load(0) == 104
    reopened.shutdown()


def test_wheel_slot_layout_and_laps(tmp_path: Path) -> None:
    wheel = TimerWheel(str(tmp_path / "timerwheel"), 10, 100, OS_FILE_SYSTEM)
    assert (tmp_path / "timerwheel").stat().st_size == 320
    wheel.put_slot(1_250, 52, 104, 2)
    slot = wheel.get_slot(1_299)
    assert (slot.time_ms, slot.first_pos, slot.last_pos, slot.num) == (1_200, 52, 104, 2)
    raw = (tmp_path / "timerwheel").read_bytes()[2 * 32 : 3 * 32]
    assert struct.unpack(">qqqii", raw) == (12, 52, 104, 2, 0)
    # One lap later the same ring position names another time: empty for that time.
    assert wheel.get_slot(1_200 + wheel.span_ms).time_ms == -1
    assert wheel.get_raw_slot(1_200 + wheel.span_ms).time_ms == 1_200
    wheel.shutdown()
    with pytest.raises(StoreError, match="timerMaxDelaySec and timerPrecisionMs"):
        TimerWheel(str(tmp_path / "timerwheel"), 20, 100, OS_FILE_SYSTEM)


def test_checkpoint_layout(tmp_path: Path) -> None:
    path = tmp_path / "config" / "timercheck"
    assert TimerCheckpoint.load(str(path)) == TimerCheckpoint()
    TimerCheckpoint(1_700, 520, 9, 9).save(str(path), OS_FILE_SYSTEM, 42)
    assert struct.unpack(">7q", path.read_bytes()[:56]) == (1_700, 520, 9, 9, 0, 42, 1)
    loaded = TimerCheckpoint.load(str(path))
    assert (loaded.last_read_time_ms, loaded.last_timer_queue_offset) == (1_700, 9)


def test_timer_log_files_go_once_the_commit_log_dropped_their_messages(tmp_path: Path) -> None:
    timer_log = TimerLog(str(tmp_path / "timerlog"), 52 * 2, OS_FILE_SYSTEM)
    timer_log.load(0)
    for offset_py in (0, 100, 200, 300, 400):  # three files: 2 + 2 + 1 units
        timer_log.append(TimerUnit(-1, 0, 1, offset_py, 100))
    assert timer_log.delete_expired(199) == 0  # the first file's last message ends at 200
    assert timer_log.delete_expired(200) == 1
    assert len(timer_log.queue.mapped_files) == 2
    assert timer_log.delete_expired(10_000) == 1  # the second; never the last
    assert timer_log.read(0) is None and timer_log.read(208) is not None
    timer_log.shutdown()
