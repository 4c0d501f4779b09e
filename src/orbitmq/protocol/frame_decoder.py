"""FrameDecoder: turns a byte stream into remoting commands, whatever the chunking."""

from __future__ import annotations

import struct
from typing import Final

from orbitmq.protocol.errors import ProtocolError
from orbitmq.protocol.remoting_command import MAX_FRAME_BYTES, RemotingCommand, decode_command

_LENGTH: Final = struct.Struct(">i")
#: Buffers are allocated in multiples of this.
_ALLOCATION_UNIT: Final = 4096
#: An emptied buffer up to this size is kept for the next frames; a bigger one is let go.
RETAINED_BUFFER_BYTES: Final = 1024 * 1024


class FrameDecoder:
    """Owns the bytes of a connection not yet forming a whole frame. One per connection;
    not shared between tasks.

    ``feed`` returns the commands completed by the new bytes. A length outside 4 bytes ..
    16 MiB, or a frame that does not decode, is a ProtocolError: the stream cannot be
    resynchronised, so the connection must close. Commands decoded before the bad frame are
    still returned; the error is raised then, or by the next ``feed``.

    The bytes wait in a buffer that is reused from frame to frame (up to
    ``RETAINED_BUFFER_BYTES``): a fresh allocation of a large frame's size costs a page fault
    per 4 KiB on its first write, about as much as decoding the frame's messages. Frames are
    decoded from views of the buffer, and the buffer never changes size in place: a view
    may outlive the decode (a frame object held by a profiler or a traceback), which would
    make an in-place resize fail; room is made by moving the pending bytes or by a new buffer.
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES):
        self._buffer = bytearray()
        # The pending bytes are _buffer[_start:_end].
        self._start = 0
        self._end = 0
        self._max_frame_bytes = max_frame_bytes
        self._error: ProtocolError | None = None

    @property
    def pending_bytes(self) -> int:
        return self._end - self._start

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._error is not None:
            raise self._error
        size = len(data)
        self._reserve(self._end - self._start + size)
        buffer = self._buffer
        end = self._end + size
        buffer[self._end : end] = data  # same length: written in place
        self._end = end
        commands: list[RemotingCommand] = []
        position = self._start
        try:
            with memoryview(buffer) as view:
                while end - position >= 4:
                    length = _LENGTH.unpack_from(buffer, position)[0]
                    if length < 4 or length + 4 > self._max_frame_bytes:
                        raise ProtocolError(
                            f"frame length {length} is outside 4..{self._max_frame_bytes - 4}"
                        )
                    frame_end = position + 4 + length
                    if frame_end > end:
                        break
                    commands.append(decode_command(view[position + 4 : frame_end]))
                    position = frame_end
        except ProtocolError as exc:
            self._error = exc
            self._buffer = bytearray()
            self._start = self._end = 0
            if not commands:
                raise
            return commands
        if position == end:
            self._start = self._end = 0
            if len(buffer) > RETAINED_BUFFER_BYTES:
                self._buffer = bytearray()
        else:
            self._start = position
            if end - position >= 4:
                # Room for the whole frame at once rather than chunk by chunk; a length not
                # backed by bytes yet claims no more than a retained buffer.
                length = _LENGTH.unpack_from(buffer, position)[0]
                self._reserve(min(4 + length, RETAINED_BUFFER_BYTES))
        return commands

    def _reserve(self, needed: int) -> None:
        """Make room for ``needed`` bytes from the first pending one."""
        buffer = self._buffer
        if self._start + needed <= len(buffer):
            return
        pending = buffer[self._start : self._end]  # a copy: the two ranges may overlap
        if needed > len(buffer):
            # Doubling keeps a frame that arrives in many chunks from being copied each time.
            units = -(-max(needed, 2 * len(buffer)) // _ALLOCATION_UNIT)
            buffer = self._buffer = bytearray(units * _ALLOCATION_UNIT)
        buffer[: len(pending)] = pending
        self._start, self._end = 0, len(pending)
