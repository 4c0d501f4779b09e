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


def test_small_answers_are_joined_into_runs_and_a_big_one_passes_uncopied() -> None:
    big = memoryview(b"Z" * 25)
    runs = list(_coalesced(iter([memoryview(b"a" * 4), memoryview(b"b" * 7), big]), 10))
    assert [bytes(r) for r in runs] == [b"aaaabbbbbbb", b"Z" * 25]
    assert runs[1] is big
    assert [bytes(r) for r in _coalesced(answers(3, 3), 10)] == [b"AAABBB"]
    assert list(_coalesced(answers(), 10)) == []


def test_answers_read_before_a_failed_pull_come_out_first() -> None:
    runs = _coalesced(answers(3, 4, fail=True), 10)
    assert bytes(next(runs)) == b"AAABBBB"
    with pytest.raises(OffsetOutOfRangeError):
        next(runs)
