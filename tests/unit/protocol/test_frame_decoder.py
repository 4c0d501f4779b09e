"""FrameDecoder's buffer: the same commands whatever the chunking, one buffer reused from
frame to frame, and views of it that outlive a decode never break a later feed."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.protocol import (
    MAX_FRAME_BYTES,
    FrameDecoder,
    ProtocolError,
    RemotingCommand,
    RequestCode,
    decode_command,
)
from orbitmq.protocol import frame_decoder as fd


def command(body_size: int, opaque: int = 0) -> RemotingCommand:
    return RemotingCommand.create_request(
        RequestCode.PULL_MESSAGE, {"n": str(opaque)}, bytes([opaque % 256]) * body_size
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 70_000), min_size=1, max_size=5),
    st.lists(st.integers(1, 90_000), min_size=1, max_size=8),
)
def test_any_chunking_gives_the_same_commands(body_sizes: list[int], cuts: list[int]) -> None:
    sent = [command(size, i) for i, size in enumerate(body_sizes)]
    stream = b"".join(c.encode() for c in sent)
    decoder = FrameDecoder()
    received: list[RemotingCommand] = []
    position = 0
    for cut in cuts * (len(stream) // sum(cuts) + 1):
        received += decoder.feed(stream[position : position + cut])
        position += cut
        if position >= len(stream):
            break
    assert received == sent
    assert decoder.pending_bytes == 0


def test_one_buffer_serves_frame_after_frame() -> None:
    decoder = FrameDecoder()
    frame = command(600_000).encode()
    decoder.feed(frame[:1000])
    buffer = decoder._buffer
    assert len(buffer) >= len(frame)  # the whole frame's room, taken once its length is known
    for _ in range(3):
        received = []
        for start in range(1000, len(frame), 256 * 1024):
            received += decoder.feed(frame[start : start + 256 * 1024])
        assert len(received) == 1
        decoder.feed(frame[:1000])
        assert decoder._buffer is buffer
    assert decoder.pending_bytes == 1000


def test_a_bigger_buffer_than_retained_is_let_go_once_empty() -> None:
    decoder = FrameDecoder()
    (received,) = decoder.feed(command(fd.RETAINED_BUFFER_BYTES + 1).encode())
    assert len(received.body) == fd.RETAINED_BUFFER_BYTES + 1
    assert len(decoder._buffer) <= fd.RETAINED_BUFFER_BYTES


def test_views_that_outlive_the_decode_do_not_stop_the_buffer_changing() -> None:
    kept: list[memoryview] = []

    def keeping_decode(frame: memoryview) -> RemotingCommand:
        kept.append(frame)  # as a frame object held by a sampler or a traceback would
        return decode_command(frame)

    decoder = FrameDecoder(decode=keeping_decode)
    small, big = command(10, 1), command(3 * fd.RETAINED_BUFFER_BYTES, 2)
    frame = small.encode()
    assert decoder.feed(frame + frame[:7]) == [small]
    assert decoder.feed(frame[7:] + big.encode()) == [small, big]
    assert decoder.feed(frame) == [small]
    assert len(kept) == 4


def _read_into(decoder: FrameDecoder, stream: bytes, reads: list[int]) -> list[RemotingCommand]:
    """What a BufferedProtocol transport does: fill the offered view, report the count."""
    received: list[RemotingCommand] = []
    position = 0
    for want in itertools.cycle(reads):
        if position >= len(stream):
            break
        view = decoder.get_buffer(-1)
        assert len(view) > 0
        count = min(want, len(view), len(stream) - position)
        view[:count] = stream[position : position + count]
        position += count
        received += decoder.buffer_updated(count)
    assert position == len(stream)
    return received


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(0, 1_500_000), min_size=1, max_size=3),
    st.lists(st.integers(1, 300_000), min_size=1, max_size=8),
)
def test_reads_into_the_offered_buffer_give_the_same_commands(
    body_sizes: list[int], reads: list[int]
) -> None:
    sent = [command(size, i) for i, size in enumerate(body_sizes)]
    decoder = FrameDecoder()
    assert _read_into(decoder, b"".join(c.encode() for c in sent), reads) == sent
    assert decoder.pending_bytes == 0


def test_the_offered_buffer_holds_the_rest_of_a_frame_up_to_the_retained_size() -> None:
    decoder = FrameDecoder()
    frame = command(600_000).encode()
    view = decoder.get_buffer(-1)
    assert len(view) == fd._READ_BYTES  # no frame yet: one ordinary read's worth
    view[:100] = frame[:100]
    assert decoder.buffer_updated(100) == []
    assert len(decoder.get_buffer(-1)) >= len(frame) - 100  # the frame's rest, in one read
    huge = struct.pack(">i", MAX_FRAME_BYTES - 8)  # a length no bytes back yet
    decoder = FrameDecoder()
    decoder.get_buffer(-1)[:4] = huge
    decoder.buffer_updated(4)
    assert len(decoder.get_buffer(-1)) <= fd.RETAINED_BUFFER_BYTES


def test_a_bad_length_read_into_the_buffer_fails_after_the_good_frames() -> None:
    decoder = FrameDecoder()
    good = command(10)
    stream = good.encode() + struct.pack(">i", -5)
    view = decoder.get_buffer(-1)
    view[: len(stream)] = stream
    assert decoder.buffer_updated(len(stream)) == [good]
    with pytest.raises(ProtocolError, match="outside"):
        decoder.buffer_updated(0)
    assert len(decoder.get_buffer(-1)) > 0  # a closing connection's last reads go nowhere


def test_reads_of_frame_after_frame_keep_one_buffer() -> None:
    decoder = FrameDecoder()
    stream = command(600_000).encode()
    assert len(_read_into(decoder, stream, [256 * 1024])) == 1
    buffer = decoder._buffer
    for _ in range(3):  # the frame's short tail must not ask for a bigger buffer
        assert len(_read_into(decoder, stream, [256 * 1024])) == 1
        assert decoder._buffer is buffer
    assert len(buffer) < 2 * len(stream)


def test_a_buffer_grown_for_large_frames_shrinks_when_small_ones_follow() -> None:
    decoder = FrameDecoder()
    big, small = command(600_000).encode(), command(100).encode()
    assert len(_read_into(decoder, big + big, [256 * 1024])) == 2
    assert len(decoder._buffer) >= len(big)  # kept while large frames come
    assert len(_read_into(decoder, small, [256 * 1024])) == 1
    assert len(decoder._buffer) <= fd._READ_BYTES
    assert len(decoder.get_buffer(-1)) <= fd._READ_BYTES
