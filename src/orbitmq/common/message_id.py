"""Message ids: RocketMQ's offset message id and the client's unique id (UNIQ_KEY)."""

from __future__ import annotations

import itertools
import os
import random
import re
import socket
import struct
import threading
import time

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.message import SocketAddress
from orbitmq.common.socket_address import pack_socket_address, unpack_socket_address

_OFFSET = struct.Struct(">q")
_HEX_ID = re.compile(r"[0-9A-Fa-f]{32}|[0-9A-Fa-f]{56}")
_MAX_PORT = 65535


def create_message_id(store_host: bytes | SocketAddress, commit_log_offset: int) -> str:
    """The offset message id: packed store host (IP + port) and the offset, upper-case hex.

    32 hex digits for an IPv4 store host (RocketMQ's usual form), 56 for IPv6.
    """
    host = store_host if isinstance(store_host, bytes) else pack_socket_address(store_host)
    return (host + _OFFSET.pack(commit_log_offset)).hex().upper()


def is_message_id_shaped(msg_id: str) -> bool:
    """32 or 56 hex digits: the shape of both an offset message id and a unique id."""
    return _HEX_ID.fullmatch(msg_id) is not None


def decode_message_id(msg_id: str) -> tuple[SocketAddress, int]:
    """The store host and commit log offset inside an offset message id.

    A unique id (UNIQ_KEY, what a producer's send returns as msg_id) has the same length,
    so the port field tells them apart, as in RocketMQ (its decodeMessageId fails on a port
    out of range): there a unique id holds the producer's pid and random bits, which make a
    port beyond 65535 unless the pid is a multiple of 65536."""
    if not is_message_id_shaped(msg_id):
        raise MessageFormatError(f"message id {msg_id!r} is not 32 or 56 hexadecimal digits")
    raw = bytes.fromhex(msg_id)
    host = unpack_socket_address(raw[:-8])
    if not 0 <= host[1] <= _MAX_PORT:
        raise MessageFormatError(
            f"message id {msg_id} is not an offset message id: its port field is {host[1]},"
            f" outside 0..{_MAX_PORT}"
        )
    return host, _OFFSET.unpack_from(raw, len(raw) - 8)[0]


def _local_ip() -> bytes:
    try:
        return socket.inet_aton(socket.gethostbyname(socket.gethostname()))
    except OSError:
        return socket.inet_aton("127.0.0.1")


def _month_start_ms(now_ms: int) -> tuple[int, int]:
    """Local midnight of the 1st of this month and of the next, in epoch ms.

    mktime with isdst=-1 applies each date's own UTC offset (a DST change within the month
    must not shift the start), as Java's Calendar does.
    """
    now = time.localtime(now_ms / 1000)
    year, month = now.tm_year, now.tm_mon
    next_year, next_month = (year + 1, 1) if month == 12 else (year, month + 1)
    start = time.mktime((year, month, 1, 0, 0, 0, 0, 0, -1))
    following = time.mktime((next_year, next_month, 1, 0, 0, 0, 0, 0, -1))
    return int(start * 1000), int(following * 1000)


class UniqueIdGenerator:
    """Creates UNIQ_KEY ids as RocketMQ's clients do (``MessageClientIDSetter``).

    Layout: IP (4 or 16 bytes), pid (2), a per-process random int (4; Java uses the class
    loader's hash), then per id: ms since the start of this month (4) and a counter (2) —
    32 upper-case hex digits for IPv4. Safe to use from several threads.
    """

    def __init__(
        self, ip: bytes | None = None, pid: int | None = None, clock: Clock = SYSTEM_CLOCK
    ):
        fixed = (
            (ip if ip is not None else _local_ip())
            + struct.pack(">H", (os.getpid() if pid is None else pid) & 0xFFFF)
            + struct.pack(">I", random.getrandbits(32))
        )
        self._prefix = fixed.hex().upper()
        self._clock = clock
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._start_ms, self._next_start_ms = _month_start_ms(clock.now_ms())

    def create(self) -> str:
        now = self._clock.now_ms()
        if now >= self._next_start_ms:
            with self._lock:
                if now >= self._next_start_ms:
                    self._start_ms, self._next_start_ms = _month_start_ms(now)
        diff = (now - self._start_ms) & 0xFFFFFFFF
        count = next(self._counter) & 0xFFFF
        return f"{self._prefix}{diff:08X}{count:04X}"
