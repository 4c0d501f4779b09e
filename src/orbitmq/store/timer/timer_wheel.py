"""TimerWheel: the ``timerwheel`` file, a ring of 32-byte slots (RocketMQ 5's ``TimerWheel``
and ``Slot``), one per ``timerPrecisionMs`` of time.

Slot layout (big-endian): timeMs / precisionMs 8 | firstPos 8 | lastPos 8 | num 4 | magic 4.
A slot names the time it holds, so a slot of an older lap of the ring is told from the one
asked for; firstPos / lastPos are the first and last timer-log units of its chain.

Slots are read and written through the file (pread / pwrite), never through a mapping, and
nothing is cached: a million pending timers cost disk and page cache, not the broker's
resident memory (RocketMQ copies the whole wheel into a direct buffer). One thread owns it.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import Final

from orbitmq.common.file_system import FileSystem
from orbitmq.store.errors import StoreError

SLOT: Final = struct.Struct(">qqqii")
SLOT_SIZE: Final = SLOT.size  # 32


@dataclass(frozen=True, slots=True)
class Slot:
    """One slot: its time (ms, a multiple of the precision; -1 when empty or another lap's),
    its chain's first and last unit positions (-1 for none), and how many units it holds."""

    time_ms: int
    first_pos: int = -1
    last_pos: int = -1
    num: int = 0
    magic: int = 0


EMPTY_SLOT: Final = Slot(-1)


class TimerWheel:
    """Owns the ``timerwheel`` file: ``slots_total`` slots of ``precision_ms`` each."""

    def __init__(self, path: str, slots_total: int, precision_ms: int, fs: FileSystem):
        self.path = path
        self.slots_total = slots_total
        self.precision_ms = precision_ms
        self._fs = fs
        length = slots_total * SLOT_SIZE
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        existed = os.path.exists(path)
        self._fd = fs.open(path, os.O_RDWR | os.O_CREAT)
        size = os.fstat(self._fd).st_size
        if existed and size not in (0, length):
            os.close(self._fd)
            raise StoreError(
                f"{path} is {size} bytes, not the {length} that timerMaxDelaySec and "
                "timerPrecisionMs ask for (2 x maxDelay / precision slots of 32 bytes); "
                "they changed while timers were pending: restore them, or remove the "
                "timer files (timerwheel, timerlog/, config/timercheck) to drop the timers"
            )
        if size != length:
            fs.truncate(self._fd, length)  # sparse: disk is taken as slots are written

    @property
    def span_ms(self) -> int:
        """How much time one lap of the ring covers."""
        return self.slots_total * self.precision_ms

    def slot_time(self, time_ms: int) -> int:
        """The start of the slot ``time_ms`` falls in."""
        return time_ms - time_ms % self.precision_ms

    def _position(self, time_ms: int) -> int:
        return (time_ms // self.precision_ms) % self.slots_total * SLOT_SIZE

    def get_slot(self, time_ms: int) -> Slot:
        """The slot of ``time_ms``; EMPTY_SLOT when it holds another time (or nothing)."""
        raw = self.get_raw_slot(time_ms)
        return raw if raw.time_ms == self.slot_time(time_ms) else EMPTY_SLOT

    def get_raw_slot(self, time_ms: int) -> Slot:
        """What the ring position of ``time_ms`` holds, whichever time that is."""
        data = os.pread(self._fd, SLOT_SIZE, self._position(time_ms))
        if len(data) < SLOT_SIZE:
            return EMPTY_SLOT
        units, first, last, num, magic = SLOT.unpack(data)
        if first == last == num == units == 0:
            return EMPTY_SLOT
        return Slot(units * self.precision_ms, first, last, num, magic)

    def put_slot(self, time_ms: int, first_pos: int, last_pos: int, num: int) -> None:
        data = SLOT.pack(time_ms // self.precision_ms, first_pos, last_pos, num, 0)
        self._fs.write(self._fd, data, self._position(time_ms))

    def flush(self) -> None:
        self._fs.sync(self._fd)

    def shutdown(self) -> None:
        if self._fd >= 0:
            self.flush()
            os.close(self._fd)
            self._fd = -1
