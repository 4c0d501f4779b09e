"""FrameDecoder: turns a byte stream into remoting commands, whatever the chunking."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from orbitmq.protocol.errors import ProtocolError
from orbitmq.protocol.remoting_command import (
    MAX_FRAME_BYTES,
    RemotingCommand,
    check_frame_length,
    decode_command,
)

_LENGTH: Final = struct.Struct(">i")
#: Buffers are allocated in multiples of this.
_ALLOCATION_UNIT: Final = 4096
#: An emptied buffer up to this size is kept for the next frames; a bigger one is let go.
RETAINED_BUFFER_BYTES: Final = 1024 * 1024
#: Free space offered to a socket read when no frame in progress asks for more.
_READ_BYTES: Final = 16 * 1024


class FrameDecoder:
    """Owns the bytes of a connection not yet forming a whole frame. One per connection;
    not shared between tasks.

    ``feed`` returns the commands completed by the new bytes; ``get_buffer`` and
    ``buffer_updated`` do the same for bytes a socket read writes straight into the buffer
    (no copy). A length outside 4 bytes .. 16 MiB, or a frame that does not decode, is a
    ProtocolError: the stream cannot be resynchronised, so the connection must close.
    Commands decoded before the bad frame are still returned; the error is raised then, or by
    the next ``feed`` or ``buffer_updated``.

    The bytes wait in a buffer that is reused from frame to frame while large frames keep
    coming (up to ``RETAINED_BUFFER_BYTES``): a fresh allocation of a large frame's size costs
    a page fault per 4 KiB on its first write, about as much as decoding the frame's
    messages. Once only small frames arrive, it shrinks back to a read's worth. Frames are
    decoded from views of the buffer, and the buffer never changes size in place: a view
    may outlive the decode (a frame object held by a profiler or a traceback), which would
    make an in-place resize fail; room is made by moving the pending bytes or by a new buffer.
    """

    def __init__(
        self,
        max_frame_bytes: int = MAX_FRAME_BYTES,
        decode: Callable[[memoryview], RemotingCommand] = decode_command,
    ):
        # ``decode`` takes one frame's view (after its length); a test's can keep the view.
        self._decode_frame = decode
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
        """Take ``data`` (copied into the buffer) and return the commands it completes."""
        if self._error is not None:
            raise self._error
        size = len(data)
        self._reserve(self._end - self._start + size)
        end = self._end + size
        self._buffer[self._end : end] = data  # same length: written in place
        self._end = end
        return self._decode()

    def get_buffer(self, sizehint: int = -1) -> memoryview:
        """Free space after the pending bytes, for a socket read to fill directly (asyncio's
        ``BufferedProtocol``); ``buffer_updated`` then decodes what the read wrote. Room is
        made for the rest of the current frame when its length is known, so a large frame
        arrives in few reads, up to ``RETAINED_BUFFER_BYTES`` ahead of its bytes."""
        del sizehint  # what the transport would like; the frame being read decides instead
        if self._error is not None:
            return memoryview(bytearray(_READ_BYTES))  # the connection is closing: discarded
        pending = self._end - self._start
        want = _READ_BYTES
        if pending >= 4:
            length = _LENGTH.unpack_from(self._buffer, self._start)[0]
            if length >= 4 and length + 4 <= self._max_frame_bytes:
                # The frame's rest (asking for more would grow a buffer that has room for
                # it), but no further ahead of its bytes than a retained buffer.
                rest = 4 + length - pending
                want = min(rest, max(RETAINED_BUFFER_BYTES - pending, _READ_BYTES))
        self._reserve(pending + want)
        return memoryview(self._buffer)[self._end :]

    def buffer_updated(self, nbytes: int) -> list[RemotingCommand]:
        """``nbytes`` were written at the start of the last ``get_buffer``'s view: the
        commands they complete."""
        if self._error is not None:
            raise self._error
        self._end += nbytes
        return self._decode()

    def _decode(self) -> list[RemotingCommand]:
        buffer = self._buffer
        end = self._end
        commands: list[RemotingCommand] = []
        position = self._start
        largest = 0
        try:
            with memoryview(buffer) as view:
                while end - position >= 4:
                    length = _LENGTH.unpack_from(buffer, position)[0]
                    check_frame_length(length, self._max_frame_bytes)
                    frame_end = position + 4 + length
                    if frame_end > end:
                        break
                    commands.append(self._decode_frame(view[position + 4 : frame_end]))
                    position = frame_end
                    largest = max(largest, length)
        except ProtocolError as exc:
            self._error = exc
            self._buffer = bytearray()
            self._start = self._end = 0
            if not commands:
                raise
            return commands
        if position == end:
            self._start = self._end = 0
            # A buffer past the retained size goes at once; one grown for large frames goes
            # when small ones follow (a heartbeat after a burst of batches), so a quiet
            # connection holds a read's worth, not its largest frame.
            if len(buffer) > RETAINED_BUFFER_BYTES or (
                len(buffer) > _READ_BYTES and largest <= _READ_BYTES
            ):
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
