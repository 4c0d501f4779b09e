"""The push consumer's per-queue buffer: commit point under out-of-order completion (R26),
flow control (R25), orderly take/commit/consume-again and lock expiry (R27), consume timeout."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.client.process_queue import (
    PULL_MAX_IDLE_TIME_MS,
    REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    ProcessQueue,
    PullPauseReason,
)
from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc
from orbitmq.testing import ManualClock

START_MS = 1_700_000_000_000


def msg(offset: int, body: bytes = b"x", **properties: str) -> MessageExt:
    return MessageExt(topic="T", body=body, queue_offset=offset, properties=dict(properties))


def msgs(*offsets: int) -> list[MessageExt]:
    return [msg(o) for o in offsets]


def make() -> tuple[ManualClock, ProcessQueue]:
    clock = ManualClock(START_MS)
    return clock, ProcessQueue(clock)


# --- put / remove: the commit point (R26) ---------------------------------------------------


def test_remove_commits_lowest_offset_still_in_flight() -> None:
    _, pq = make()
    pq.put_messages(msgs(10, 11, 12, 13))
    assert pq.remove_messages(msgs(12)) == 10
    assert pq.remove_messages(msgs(11, 13)) == 10
    assert pq.remove_messages(msgs(10)) == 14


def test_remove_from_empty_queue_answers_minus_one() -> None:
    _, pq = make()
    assert pq.remove_messages(msgs(3)) == -1
    pq.put_messages(msgs(3))
    assert pq.remove_messages(msgs(3)) == 4
    # Nothing held any more: RocketMQ answers -1 (the caller commits only offsets >= 0).
    assert pq.remove_messages(msgs(3)) == -1


def test_remove_of_unknown_message_keeps_the_commit_point() -> None:
    _, pq = make()
    pq.put_messages(msgs(5, 6))
    assert pq.remove_messages(msgs(99)) == 5
    assert pq.msg_count == 2


def test_counts_sizes_and_span() -> None:
    _, pq = make()
    pq.put_messages([msg(100, b"abc"), msg(105, b"defgh"), msg(150, b"")])
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (3, 8, 50)
    assert (pq.first_offset, pq.last_offset) == (100, 150)
    pq.remove_messages([msg(150, b"")])
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (2, 8, 5)
    pq.remove_messages(msgs(100, 105))
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (0, 0, 0)
    assert pq.first_offset is None


def test_a_message_put_twice_is_counted_once() -> None:
    _, pq = make()
    pq.put_messages([msg(1, b"aa"), msg(2, b"bb")])
    pq.put_messages([msg(2, b"bbbb")])
    assert (pq.msg_count, pq.msg_size) == (2, 6)


def test_out_of_order_put_stays_sorted() -> None:
    _, pq = make()
    pq.put_messages(msgs(20, 10, 30))
    assert (pq.first_offset, pq.last_offset) == (10, 30)
    assert pq.remove_messages(msgs(10)) == 20


def test_remove_updates_last_consume_timestamp() -> None:
    clock, pq = make()
    pq.put_messages(msgs(1))
    clock.advance(500)
    pq.remove_messages(msgs(1))
    assert pq.last_consume_timestamp == START_MS + 500


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_completion_order_never_commits_past_an_unconsumed_offset(
    data: st.DataObject,
) -> None:
    _, pq = make()
    next_offset = 0
    in_flight: set[int] = set()
    last_commit = -1
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        if not in_flight or data.draw(st.booleans(), label="put"):
            # A pull: increasing offsets, with gaps where a filter skipped messages.
            gaps = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=8), label="gaps")
            batch = []
            for gap in gaps:
                next_offset += gap
                batch.append(next_offset)
                next_offset += 1
            pq.put_messages(msgs(*batch))
            in_flight.update(batch)
        else:
            done = data.draw(
                st.lists(st.sampled_from(sorted(in_flight)), min_size=1, unique=True),
                label="done",
            )
            committed = pq.remove_messages(msgs(*done))
            in_flight.difference_update(done)
            assert committed >= 0
            if in_flight:
                assert committed == min(in_flight)
            else:
                assert committed == next_offset  # highest put + 1
            assert committed >= last_commit
            last_commit = committed
        assert pq.msg_count == len(in_flight)
    everything = pq.remove_messages(msgs(*in_flight)) if in_flight else next_offset
    assert everything == next_offset
    assert pq.msg_count == 0


def test_put_and_remove_from_threads() -> None:
    _, pq = make()
    pq.put_messages(msgs(*range(4000)))
    parts = [list(range(i, 4000, 4)) for i in range(4)]
    threads = [threading.Thread(target=pq.remove_messages, args=(msgs(*p),)) for p in parts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (pq.msg_count, pq.msg_size) == (0, 0)


def test_msg_acc_cnt_from_the_last_message_max_offset() -> None:
    _, pq = make()
    pq.put_messages([msg(10), msg(11, b"x", **{mc.PROPERTY_MAX_OFFSET: "50"})])
    assert pq.msg_acc_cnt == 39
    pq.put_messages([msg(12, b"x", **{mc.PROPERTY_MAX_OFFSET: "12"})])
    assert pq.msg_acc_cnt == 39  # no backlog left is not recorded, as RocketMQ


# --- flow control (R25) ---------------------------------------------------------------------


def test_no_pause_at_the_thresholds() -> None:
    _, pq = make()
    pq.put_messages(msgs(*range(0, 1000)))
    assert pq.pull_pause_reason(threshold_count=1000, max_span=999) is None


def test_pause_on_count() -> None:
    _, pq = make()
    pq.put_messages(msgs(*range(1001)))
    assert pq.pull_pause_reason() is PullPauseReason.MSG_COUNT
    assert pq.pull_pause_reason(threshold_count=2000) is None


def test_pause_on_size_in_whole_mib() -> None:
    _, pq = make()
    pq.put_messages([msg(0, b"\0" * (3 * 1024 * 1024))])
    assert pq.pull_pause_reason(threshold_size_mib=3) is None
    pq.put_messages([msg(1, b"\0" * (1024 * 1024))])
    assert pq.pull_pause_reason(threshold_size_mib=3) is PullPauseReason.MSG_SIZE


def test_pause_on_span_for_concurrent_consumers_only() -> None:
    _, pq = make()
    pq.put_messages(msgs(0, 2001))
    assert pq.pull_pause_reason() is PullPauseReason.MAX_SPAN
    assert pq.pull_pause_reason(orderly=True) is None
    pq.remove_messages(msgs(0))
    assert pq.pull_pause_reason() is None


def test_count_is_checked_before_span() -> None:
    _, pq = make()
    pq.put_messages(msgs(*range(0, 3000, 2)))
    assert pq.pull_pause_reason() is PullPauseReason.MSG_COUNT


def test_pull_expiry() -> None:
    clock, pq = make()
    clock.advance(PULL_MAX_IDLE_TIME_MS)
    assert not pq.is_pull_expired()
    clock.advance(1)
    assert pq.is_pull_expired()
    pq.last_pull_timestamp = clock.now_ms()
    assert not pq.is_pull_expired()


# --- consume timeout ------------------------------------------------------------------------


def started(offset: int, at_ms: int) -> MessageExt:
    return msg(offset, b"x", **{mc.PROPERTY_CONSUME_START_TIMESTAMP: str(at_ms)})


def test_expired_messages_are_found_from_the_head() -> None:
    clock, pq = make()
    timeout_ms = 15 * 60_000
    pq.put_messages([started(1, START_MS), started(2, START_MS), started(3, START_MS + 5_000)])
    clock.advance(timeout_ms)
    assert pq.expired_messages(timeout_ms) == []
    clock.advance(1)
    assert [m.queue_offset for m in pq.expired_messages(timeout_ms)] == [1, 2]
    clock.advance(5_000)
    assert [m.queue_offset for m in pq.expired_messages(timeout_ms)] == [1, 2, 3]
    # The caller sends them back and removes them; the commit point moves past them.
    assert pq.remove_messages(pq.expired_messages(timeout_ms)) == 4


def test_expired_sweep_stops_at_a_message_not_started_or_not_expired() -> None:
    clock, pq = make()
    pq.put_messages([started(1, START_MS), msg(2), started(3, START_MS)])
    clock.advance(10_000)
    assert [m.queue_offset for m in pq.expired_messages(1000)] == [1]
    pq.remove_messages(msgs(1))
    assert pq.expired_messages(1000) == []


def test_expired_sweep_takes_an_explicit_now_and_a_limit() -> None:
    _, pq = make()
    pq.put_messages([started(i, 0) for i in range(40)])
    assert len(pq.expired_messages(1000, now_ms=1000)) == 0
    assert len(pq.expired_messages(1000, now_ms=1001)) == 16
    assert len(pq.expired_messages(1000, now_ms=1001, limit=40)) == 40


# --- orderly (R27) --------------------------------------------------------------------------


def test_put_asks_for_dispatch_only_when_not_consuming() -> None:
    _, pq = make()
    assert pq.put_messages([]) is False
    assert pq.put_messages(msgs(1, 2)) is True
    assert pq.consuming
    assert pq.put_messages(msgs(3)) is False


def test_take_commit_in_batches() -> None:
    _, pq = make()
    pq.put_messages([msg(o, b"ab") for o in (5, 6, 7)])
    taken = pq.take_messages(2)
    assert [m.queue_offset for m in taken] == [5, 6]
    assert pq.msg_count == 3  # taken messages count until committed
    assert pq.max_span == 0  # the span covers what is waiting only
    assert pq.commit() == 7
    assert (pq.msg_count, pq.msg_size) == (1, 2)
    assert [m.queue_offset for m in pq.take_messages(2)] == [7]
    assert pq.commit() == 8
    assert pq.commit() == -1
    assert (pq.msg_count, pq.msg_size) == (0, 0)


def test_empty_take_ends_the_consume_loop_and_next_put_dispatches() -> None:
    _, pq = make()
    assert pq.put_messages(msgs(1))
    pq.take_messages(1)
    pq.commit()
    assert pq.consuming
    assert pq.take_messages(1) == []
    assert not pq.consuming
    assert pq.put_messages(msgs(2)) is True


def test_consume_again_puts_messages_back_in_place() -> None:
    _, pq = make()
    pq.put_messages([msg(o, b"abc") for o in (1, 2, 3)])
    first = pq.take_messages(2)
    pq.make_message_to_consume_again(first)
    assert (pq.msg_count, pq.msg_size) == (3, 9)
    assert pq.commit() == -1
    assert [m.queue_offset for m in pq.take_messages(3)] == [1, 2, 3]
    assert pq.commit() == 4


def test_consume_again_of_part_of_a_batch() -> None:
    _, pq = make()
    pq.put_messages(msgs(1, 2, 3))
    taken = pq.take_messages(3)
    pq.make_message_to_consume_again(taken[1:])
    assert pq.commit() == 2
    assert [m.queue_offset for m in pq.take_messages(5)] == [2, 3]


def test_rollback_returns_every_taken_message() -> None:
    _, pq = make()
    pq.put_messages(msgs(1, 2, 3))
    pq.take_messages(2)
    pq.rollback()
    assert pq.msg_count == 3
    assert pq.first_offset == 1
    assert pq.commit() == -1


def test_put_ignores_a_message_being_consumed() -> None:
    _, pq = make()
    pq.put_messages(msgs(1, 2))
    pq.take_messages(1)
    pq.put_messages(msgs(1, 3))
    assert pq.msg_count == 3
    assert pq.commit() == 2
    assert [m.queue_offset for m in pq.take_messages(5)] == [2, 3]


def test_lock_expiry() -> None:
    clock, pq = make()
    pq.locked = True
    pq.last_lock_timestamp = clock.now_ms()
    clock.advance(REBALANCE_LOCK_MAX_LIVE_TIME_MS)
    assert not pq.is_lock_expired()
    clock.advance(1)
    assert pq.is_lock_expired()
    pq.last_lock_timestamp = clock.now_ms()
    assert not pq.is_lock_expired()


def test_clear_forgets_everything() -> None:
    _, pq = make()
    pq.put_messages(msgs(1, 2, 3))
    pq.take_messages(1)
    pq.clear()
    assert (pq.msg_count, pq.msg_size, pq.max_span) == (0, 0, 0)
    assert not pq.has_temp_message()
    assert pq.remove_messages(msgs(2)) == -1


@pytest.mark.parametrize("flag", ["dropped", "locked"])
def test_flags_start_false(flag: str) -> None:
    _, pq = make()
    assert getattr(pq, flag) is False


# --- what consumer running info reports ----------------------------------------------------


def test_process_queue_info_reports_the_cached_and_taken_runs() -> None:
    clock, pq = make()
    pq.put_messages(msgs(10, 11, 12, 13))
    taken = pq.take_messages(2)  # orderly: 10 and 11 being consumed
    clock.advance(5)
    pq.locked = True

    info = pq.fill_process_queue_info(commit_offset=10)

    assert [m.queue_offset for m in taken] == [10, 11]
    assert (info.commit_offset, info.locked, info.droped) == (10, True, False)
    assert (info.cached_msg_min_offset, info.cached_msg_max_offset) == (12, 13)
    assert info.cached_msg_count == 2
    assert (info.transaction_msg_min_offset, info.transaction_msg_max_offset) == (10, 11)
    assert info.transaction_msg_count == 2
    assert info.last_consume_timestamp == START_MS
