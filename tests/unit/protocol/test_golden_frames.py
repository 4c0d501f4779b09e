"""Frames recorded between a real RocketMQ 4.9.8 broker and real clients (../shared/compat)
decode to the headers the recording names, and survive our encoder."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from orbitmq.protocol import FrameDecoder, RemotingCommand, SerializeType, decode_command
from tests.support import COMPAT_DIR as COMPAT
from tests.support import compat_recordings

RECORDINGS = compat_recordings()


@dataclass(frozen=True)
class Recorded:
    name: str
    direction: str
    header: dict[str, object]
    body_length: int
    raw: bytes

    @property
    def whole(self) -> bool:
        """The recording keeps at most 512 bytes of a frame."""
        return len(self.raw) >= 4 + int.from_bytes(self.raw[:4], "big")


def _frames() -> list[Recorded]:
    frames = []
    for path in RECORDINGS:
        for line in path.read_text().splitlines():
            row = json.loads(line)
            frames.append(
                Recorded(
                    path.name, row["dir"], row["header"], row["bodyLen"], bytes.fromhex(row["hex"])
                )
            )
    return frames


FRAMES = _frames()
WHOLE = [f for f in FRAMES if f.whole]


def _as_java_reads(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _check_header(command: RemotingCommand, header: dict[str, object]) -> None:
    assert command.code == header["code"]
    assert command.opaque == header["opaque"]
    assert command.flag == header["flag"]
    assert command.version == header["version"]
    assert command.language.name == header["language"]
    assert command.remark == header.get("remark")
    ext = header.get("extFields") or {}
    assert isinstance(ext, dict)
    assert command.ext_fields == {k: _as_java_reads(v) for k, v in ext.items()}


def test_the_recordings_are_there() -> None:
    assert len(RECORDINGS) == 3, f"expected the three recordings in {COMPAT}"
    assert len(WHOLE) > 100


@pytest.mark.parametrize("frame", WHOLE, ids=lambda f: f"{f.name[:24]}-{f.header['opaque']}")
def test_whole_frames_decode_to_the_recorded_header(frame: Recorded) -> None:
    decoder = FrameDecoder()
    (command,) = decoder.feed(frame.raw)
    assert decoder.pending_bytes == 0
    assert command.serialize_type is SerializeType.JSON
    _check_header(command, frame.header)
    assert len(command.body) == frame.body_length
    again = decode_command(command.encode()[4:])
    assert again == command


def test_headers_of_truncated_recordings_decode() -> None:
    checked = 0
    for frame in FRAMES:
        if frame.whole:
            continue
        header_length = int.from_bytes(frame.raw[4:8], "big") & 0xFFFFFF
        if 8 + header_length <= len(frame.raw):
            _check_header(decode_command(frame.raw[4 : 8 + header_length]), frame.header)
            checked += 1
    assert checked > 0


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.name[:30])
def test_a_conversation_decodes_the_same_whole_or_byte_by_byte(path: Path) -> None:
    frames = [f for f in WHOLE if f.name == path.name and f.direction == "C->S"]
    stream = b"".join(f.raw for f in frames)
    whole = FrameDecoder().feed(stream)
    byte_by_byte = FrameDecoder()
    one_at_a_time = [c for i in range(len(stream)) for c in byte_by_byte.feed(stream[i : i + 1])]
    assert whole == one_at_a_time
    assert [c.opaque for c in whole] == [f.header["opaque"] for f in frames]


def test_cpp_client_json_header_with_trailing_newline_and_numbers() -> None:
    sends = [f for f in WHOLE if f.header["code"] == 310 and "cvs" in f.name]
    assert sends, "the C++ 2.1.0 recording holds a SEND_MESSAGE_V2"
    raw = sends[0].raw
    header_length = int.from_bytes(raw[4:8], "big") & 0xFFFFFF
    assert raw[8 + header_length - 1 : 8 + header_length] == b"\n"
    command = decode_command(raw[4:])
    assert command.ext_fields["d"] == "4"  # sent as a JSON number
    assert command.ext_fields["b"] == "TopicCpp2"
