"""The HA connection's bytes, as RocketMQ 4.9.8's HAConnection and HAClient read and write
them: 8-byte big-endian reports one way, 12-byte frame headers and commit log bytes the other."""

from __future__ import annotations

import pytest

from orbitmq.store.ha import (
    FRAME_HEADER_SIZE,
    REPORT_SIZE,
    FrameDecoder,
    FrameError,
    ReportDecoder,
    encode_frame_header,
    encode_report,
)
from orbitmq.store.ha.ha_codec import MAX_FRAME_BODY_SIZE, Frame


def test_a_report_is_the_offset_as_8_bytes_big_endian() -> None:
    assert REPORT_SIZE == 8
    assert encode_report(0x1_0000_0123).hex() == "0000000100000123"
    assert encode_report(0) == bytes(8)


def test_a_frame_header_is_offset_then_size() -> None:
    assert FRAME_HEADER_SIZE == 12
    # The docs' worked example: 245 bytes from offset 1 GiB (the second 1 GiB file).
    assert encode_frame_header(1 << 30, 245).hex() == "0000000040000000000000f5"


def test_the_master_counts_the_last_whole_report_only() -> None:
    decoder = ReportDecoder()
    stream = encode_report(100) + encode_report(200) + encode_report(300)[:5]
    assert decoder.feed(stream) == 200
    assert decoder.feed(encode_report(300)[5:]) == 300
    assert decoder.feed(b"") is None


def test_reports_fed_one_byte_at_a_time() -> None:
    decoder = ReportDecoder()
    seen = [decoder.feed(bytes([b])) for b in encode_report(0x0102030405060708)]
    assert seen == [None] * 7 + [0x0102030405060708]


def _frames(*frames: Frame) -> bytes:
    return b"".join(encode_frame_header(f.offset, len(f.body)) + f.body for f in frames)


def test_frames_whole_byte_by_byte_and_with_a_partial_tail() -> None:
    frames = [Frame(4096, b"abc"), Frame(4099, b""), Frame(4099, bytes(range(256)) * 3)]
    stream = _frames(*frames)
    assert FrameDecoder().feed(stream) == frames
    decoder = FrameDecoder()
    got = [f for b in stream for f in decoder.feed(bytes([b]))]
    assert got == frames
    decoder = FrameDecoder()
    assert decoder.feed(stream + stream[:7]) == frames
    assert decoder.feed(stream[7:11]) == []
    assert decoder.feed(stream[11:]) == frames


def test_a_heartbeat_is_an_empty_frame() -> None:
    assert FrameDecoder().feed(encode_frame_header(77, 0)) == [Frame(77, b"")]


@pytest.mark.parametrize("size", [-1, MAX_FRAME_BODY_SIZE + 1])
def test_a_body_size_no_master_sends_is_refused(size: int) -> None:
    with pytest.raises(FrameError, match=f"body size {size} is outside"):
        FrameDecoder().feed(encode_frame_header(0, size))


def test_garbage_after_a_frame_is_a_frame_error_not_a_hang() -> None:
    decoder = FrameDecoder()
    with pytest.raises(FrameError):
        decoder.feed(_frames(Frame(0, b"x")) + b"\xff" * 12)
