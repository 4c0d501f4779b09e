"""FrameDecoder's buffer: the same commands whatever the chunking, one buffer reused from
frame to frame, and views of it that outlive a decode never break a later feed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.protocol import FrameDecoder, RemotingCommand, RequestCode
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


def test_views_that_outlive_the_decode_do_not_stop_the_buffer_changing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept: list[memoryview] = []
    decode = fd.decode_command

    def keeping_decode(frame: memoryview) -> RemotingCommand:
        kept.append(frame)  # as a frame object held by a sampler or a traceback would
        return decode(frame)

    monkeypatch.setattr(fd, "decode_command", keeping_decode)
    decoder = FrameDecoder()
    small, big = command(10, 1), command(3 * fd.RETAINED_BUFFER_BYTES, 2)
    frame = small.encode()
    assert decoder.feed(frame + frame[:7]) == [small]
    assert decoder.feed(frame[7:] + big.encode()) == [small, big]
    assert decoder.feed(frame) == [small]
    assert len(kept) == 4
