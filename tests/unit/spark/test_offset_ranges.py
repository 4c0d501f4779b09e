"""Planning: offsets resolved per queue, the data-loss rule, ranges cut into partitions,
and the stream's rate limit and checkpoint form."""

from __future__ import annotations

import pytest

from orbitmq.common import MessageQueue
from orbitmq.spark.offset_ranges import (
    DataLossError,
    QueueRange,
    check_start,
    from_json,
    plan_ranges,
    resolve,
    to_json,
)
from orbitmq.spark.options import EARLIEST, LATEST, OffsetSpec
from orbitmq.spark.stream_reader import rate_limit

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)
Q2 = MessageQueue("T", "broker-b", 0)
BOUNDS = {Q0: (10, 100), Q1: (0, 50), Q2: (0, 0)}


class Search:
    """A queue's offset at a time: here time t maps to offset t // 10 within the bounds."""

    def __init__(self) -> None:
        self.asked: list[tuple[MessageQueue, int]] = []

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        self.asked.append((mq, timestamp_ms))
        low, high = BOUNDS[mq]
        return min(max(timestamp_ms // 10, low), high)


def test_resolve_each_kind() -> None:
    search = Search()
    assert resolve(OffsetSpec("earliest"), BOUNDS, search, missing=LATEST) == {Q0: 10, Q1: 0, Q2: 0}
    assert resolve(OffsetSpec("latest"), BOUNDS, search, missing=EARLIEST) == {
        Q0: 100,
        Q1: 50,
        Q2: 0,
    }
    named = OffsetSpec("offsets", per_queue={"T": {"0": 42, "broker-a:1": -1}})
    # "0" names queue 0 on both brokers; a queue left out gets ``missing``.
    assert resolve(named, BOUNDS, search, missing=EARLIEST) == {Q0: 42, Q1: 50, Q2: 42}
    assert search.asked == []
    at = resolve(OffsetSpec("timestamp", timestamp_ms=300), BOUNDS, search, missing=EARLIEST)
    assert at == {Q0: 30, Q1: 30, Q2: 0}
    per_queue = OffsetSpec("timestamps", per_queue={"T": {"broker-a:1": 120}})
    assert resolve(per_queue, BOUNDS, search, missing=EARLIEST) == {Q0: 10, Q1: 12, Q2: 0}


def test_data_loss_fails_or_skips_to_the_oldest_stored_offset(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert check_start(Q0, 10, 10, 100, fail=True) == 10
    assert check_start(Q0, 100, 10, 100, fail=True) == 100
    with pytest.raises(DataLossError, match=r"offsets \[3, 10\) of T queue broker-a:0 are gone"):
        check_start(Q0, 3, 10, 100, fail=True)
    with pytest.raises(DataLossError, match="past the queue's max offset 100"):
        check_start(Q0, 101, 10, 100, fail=True)
    assert check_start(Q0, 3, 10, 100, fail=False) == 10
    assert "failOnDataLoss=false" in caplog.text


def test_one_range_per_queue_with_something_to_read() -> None:
    ranges = plan_ranges({Q0: 10, Q1: 50}, {Q0: 100, Q1: 50, Q2: 5})
    assert ranges == [QueueRange("T", "broker-a", 0, 10, 100), QueueRange("T", "broker-b", 0, 0, 5)]


def test_ranges_split_by_size_and_by_min_partitions() -> None:
    by_size = plan_ranges({Q0: 0}, {Q0: 10}, max_records_per_partition=4)
    assert [(r.start, r.end) for r in by_size] == [(0, 4), (4, 7), (7, 10)]
    # Six partitions wanted from two queues of 90 and 30 offsets: 5 and 2 pieces.
    by_count = plan_ranges({Q0: 10, Q1: 0}, {Q0: 100, Q1: 30}, min_partitions=6)
    assert [(r.queue_id, r.size) for r in by_count] == [(0, 18)] * 5 + [(1, 15)] * 2
    assert sum(r.size for r in by_count) == 120
    # Never more pieces than offsets.
    assert len(plan_ranges({Q0: 0}, {Q0: 2}, min_partitions=10)) == 2


def test_rate_limit_shares_by_backlog_and_always_moves() -> None:
    start = {Q0: 10, Q1: 0}
    latest = {Q0: 100, Q1: 30, Q2: 0}
    assert rate_limit(start, latest, 1000) == latest
    limited = rate_limit(start, latest, 40)
    assert limited == {Q0: 40, Q1: 10, Q2: 0}
    assert sum(limited[q] - start.get(q, 0) for q in limited) == 40
    tiny = rate_limit(start, latest, 1)
    assert sum(tiny[q] - start.get(q, 0) for q in tiny) == 1


def test_checkpointed_offsets_round_trip() -> None:
    offsets = {Q2: 7, Q0: 5, MessageQueue("U", "broker-a", 3): 1}
    as_json = to_json(offsets)
    assert as_json == {"T": {"broker-a:0": 5, "broker-b:0": 7}, "U": {"broker-a:3": 1}}
    assert from_json(as_json) == offsets
