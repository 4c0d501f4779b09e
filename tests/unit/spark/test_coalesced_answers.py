"""Pull answers decoded in runs: small answers are joined up to the run size, a big one
passes uncopied, and the answers read before a failed pull still come out."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orbitmq.client import OffsetOutOfRangeError
from orbitmq.common import MessageQueue
from orbitmq.spark.range_reader import _coalesced


def answers(*sizes: int, fail: bool = False) -> Iterator[memoryview]:
    for i, size in enumerate(sizes):
        yield memoryview(bytes([65 + i]) * size)
    if fail:
        raise OffsetOutOfRangeError(MessageQueue("T", "broker-a", 0), 7, 9, 20)


def runs(chunks: Iterator[memoryview], limit: int = 10) -> list[bytes]:
    # Each run is used before the next is asked for, as the reader does.
    return [bytes(run) for run in _coalesced(chunks, limit)]


def test_small_answers_are_joined_into_runs_and_a_big_one_passes_uncopied() -> None:
    assert runs(answers(6, 6, 6, 6, 3)) == [b"A" * 6 + b"B" * 6, b"C" * 6 + b"D" * 6, b"EEE"]
    assert runs(answers(3, 25)) == [b"AAA" + b"B" * 25]  # the buffer grows
    assert runs(answers()) == []
    big = memoryview(b"Z" * 25)
    passed = list(_coalesced(iter([big]), 10))
    assert passed == [big] and passed[0] is big


def test_answers_read_before_a_failed_pull_come_out_first() -> None:
    runs = _coalesced(answers(3, 4, fail=True), 10)
    assert bytes(next(runs)) == b"AAABBBB"
    with pytest.raises(OffsetOutOfRangeError):
        next(runs)
