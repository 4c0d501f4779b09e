"""FrameDecoder: turns a byte stream into remoting commands, whatever the chunking."""

from __future__ import annotations

import struct
from typing import Final

from orbitmq.protocol.errors import ProtocolError
from orbitmq.protocol.remoting_command import MAX_FRAME_BYTES, RemotingCommand, decode_command

_LENGTH: Final = struct.Struct(">i")


class FrameDecoder:
    """Owns the bytes of a connection not yet forming a whole frame. One per connection;
    not shared between tasks.

    ``feed`` returns the commands completed by the new bytes. A length outside 4 bytes ..
    16 MiB, or a frame that does not decode, is a ProtocolError: the stream cannot be
    resynchronised, so the connection must close. Commands decoded before the bad frame are
    still returned; the error is raised then, or by the next ``feed``.
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES):
        self._buffer = bytearray()
        self._max_frame_bytes = max_frame_bytes
        self._error: ProtocolError | None = None

    @property
    def pending_bytes(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._error is not None:
            raise self._error
        self._buffer += data
        commands: list[RemotingCommand] = []
        buffer = self._buffer
        position = 0
        try:
            while len(buffer) - position >= 4:
                length = _LENGTH.unpack_from(buffer, position)[0]
                if length < 4 or length + 4 > self._max_frame_bytes:
                    raise ProtocolError(
                        f"frame length {length} is outside 4..{self._max_frame_bytes - 4}"
                    )
                end = position + 4 + length
                if end > len(buffer):
                    break
                # A copy of the frame (a bytearray slice), which decode_command may view:
                # no view of the buffer itself may outlive this call, it is resized below.
                commands.append(decode_command(buffer[position + 4 : end]))
                position = end
        except ProtocolError as exc:
            self._error = exc
            self._buffer.clear()
            if not commands:
                raise
            return commands
        if position:
            del buffer[:position]
        return commands
