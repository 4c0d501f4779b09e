"""The bytes of RocketMQ 4.x's HA connection, sans-IO (HAConnection / HAClient, 4.9.8).

Slave -> master: reports, each the slave's commit log max offset as 8 bytes big-endian.
Master -> slave: frames, each an 8-byte physical offset, a 4-byte body size (both
big-endian) and that many bytes of the master's commit log; a size of 0 is a heartbeat.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

_REPORT: Final = struct.Struct(">q")
_FRAME_HEADER: Final = struct.Struct(">qi")
#: A report is one long (RocketMQ's HAClient.reportOffset buffer).
REPORT_SIZE: Final = _REPORT.size
#: RocketMQ's HAConnection.WriteSocketService.headerSize and HAClient's MSG_HEADER_SIZE.
FRAME_HEADER_SIZE: Final = _FRAME_HEADER.size
#: RocketMQ's HAClient READ_MAX_BUFFER_SIZE: a 4.9.8 slave cannot take a frame larger than
#: its read buffer, so neither do we, nor does our master send one.
SLAVE_READ_BUFFER_SIZE: Final = 4 * 1024 * 1024
MAX_FRAME_BODY_SIZE: Final = SLAVE_READ_BUFFER_SIZE - FRAME_HEADER_SIZE
#: RocketMQ's ReadSocketService READ_MAX_BUFFER_SIZE on the master.
MASTER_READ_BUFFER_SIZE: Final = 1024 * 1024


class FrameError(ValueError):
    """The master sent a frame no RocketMQ master sends (negative or oversized body)."""


def encode_report(offset: int) -> bytes:
    """A slave's report of its commit log max offset."""
    return _REPORT.pack(offset)


def encode_frame_header(offset: int, size: int) -> bytes:
    """The 12 bytes before ``size`` bytes of commit log starting at ``offset``."""
    return _FRAME_HEADER.pack(offset, size)


class ReportDecoder:
    """Master side: turns the bytes a slave sends into its latest report.

    As RocketMQ's ReadSocketService, only the last whole report of what arrived counts
    (reports only grow; older ones say nothing more). One connection's; not thread-safe."""

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> int | None:
        """The offset of the last report completed by ``data``; None if none completed."""
        buffered = self._pending + data
        whole = len(buffered) - len(buffered) % REPORT_SIZE
        self._pending = buffered[whole:]
        if whole == 0:
            return None
        return int(_REPORT.unpack_from(buffered, whole - REPORT_SIZE)[0])


@dataclass(frozen=True, slots=True)
class Frame:
    """``body`` is the master's commit log from physical ``offset``; empty: a heartbeat."""

    offset: int
    body: bytes


class FrameDecoder:
    """Slave side: splits the master's stream into frames, whatever the read sizes.

    One connection's; not thread-safe."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        """The frames ``data`` completes, in order. Raises FrameError for a body size
        below 0 or above ``MAX_FRAME_BODY_SIZE``; the connection is then unusable."""
        buffer = self._buffer
        buffer += data
        frames: list[Frame] = []
        position = 0
        while len(buffer) - position >= FRAME_HEADER_SIZE:
            offset, size = _FRAME_HEADER.unpack_from(buffer, position)
            if not 0 <= size <= MAX_FRAME_BODY_SIZE:
                raise FrameError(
                    f"HA frame at offset {offset}: body size {size} is outside "
                    f"0..{MAX_FRAME_BODY_SIZE}"
                )
            end = position + FRAME_HEADER_SIZE + size
            if len(buffer) < end:
                break
            frames.append(Frame(offset, bytes(buffer[position + FRAME_HEADER_SIZE : end])))
            position = end
        del buffer[:position]
        return frames
