"""The producer's latency fault strategy: slow brokers are avoided for a while that grows with
their latency, and selection falls back to the least bad broker when all are avoided."""

from __future__ import annotations

import pytest

from orbitmq.client import (
    LatencyFaultTolerance,
    MQFaultStrategy,
    ThreadLocalIndex,
    TopicPublishInfo,
)
from orbitmq.common import MessageQueue
from orbitmq.testing import ManualClock

QUEUES = [MessageQueue("T", broker, i) for broker in ("broker-a", "broker-b") for i in range(2)]


def index_from(first: int) -> ThreadLocalIndex:
    """A rotating index whose first answer is ``first`` (>= 1): RocketMQ draws a random start
    and increments before answering."""
    return ThreadLocalIndex(lambda: first - 1)


def publish_info(first: int = 1, queues: list[MessageQueue] = QUEUES) -> TopicPublishInfo:
    return TopicPublishInfo(queues, send_which_queue=index_from(first))


def make(enabled: bool = True) -> tuple[ManualClock, MQFaultStrategy]:
    clock = ManualClock(1_000_000)
    tolerance = LatencyFaultTolerance(clock, which_item_worst=index_from(1))
    return clock, MQFaultStrategy(
        clock, send_latency_fault_enable=enabled, latency_fault_tolerance=tolerance
    )


@pytest.mark.parametrize(
    ("latency_ms", "duration_ms"),
    [
        (0, 0),
        (99, 0),
        (549, 0),
        (550, 30_000),
        (600, 30_000),
        (1000, 60_000),
        (2500, 120_000),
        (3000, 180_000),
        (14_999, 180_000),
        (15_000, 600_000),
        (60_000, 600_000),
    ],
)
def test_not_available_duration_table(latency_ms: int, duration_ms: int) -> None:
    _, strategy = make()
    assert strategy.compute_not_available_duration(latency_ms) == duration_ms


def test_600_ms_makes_a_broker_unavailable_for_30_seconds() -> None:
    clock, strategy = make()
    tolerance = strategy.latency_fault_tolerance
    strategy.update_fault_item("broker-a", 600, isolation=False)
    assert not tolerance.is_available("broker-a")
    assert tolerance.is_available("broker-b")  # never reported
    clock.advance(29_999)
    assert not tolerance.is_available("broker-a")
    clock.advance(1)
    assert tolerance.is_available("broker-a")


def test_3000_ms_makes_a_broker_unavailable_for_180_seconds() -> None:
    clock, strategy = make()
    strategy.update_fault_item("broker-a", 3000, isolation=False)
    clock.advance(179_999)
    assert not strategy.latency_fault_tolerance.is_available("broker-a")
    clock.advance(1)
    assert strategy.latency_fault_tolerance.is_available("broker-a")


def test_isolation_counts_as_30_seconds_of_latency_so_ten_minutes_away() -> None:
    clock, strategy = make()
    strategy.update_fault_item("broker-a", 5, isolation=True)
    clock.advance(599_999)
    assert not strategy.latency_fault_tolerance.is_available("broker-a")
    clock.advance(1)
    assert strategy.latency_fault_tolerance.is_available("broker-a")


def test_a_fast_send_makes_the_broker_available_again() -> None:
    _, strategy = make()
    strategy.update_fault_item("broker-a", 2000, isolation=False)
    strategy.update_fault_item("broker-a", 10, isolation=False)
    assert strategy.latency_fault_tolerance.is_available("broker-a")


def test_nothing_is_recorded_when_the_fault_strategy_is_off() -> None:
    _, strategy = make(enabled=False)
    strategy.update_fault_item("broker-a", 60_000, isolation=True)
    assert strategy.latency_fault_tolerance.is_available("broker-a")
    assert strategy.latency_fault_tolerance.pick_one_at_least() is None


def test_off_by_default_round_robin_steps_off_the_last_broker() -> None:
    strategy = MQFaultStrategy(ManualClock(0))
    assert not strategy.send_latency_fault_enable
    info = publish_info(1)
    picks = [strategy.select_one_message_queue(info, None) for _ in range(5)]
    assert picks == [*QUEUES[1:], *QUEUES[:2]]
    # Indexes 6 and 7 land on broker-b and are skipped; index 8 is queue 0 on broker-a.
    assert strategy.select_one_message_queue(info, "broker-b") == QUEUES[0]


def test_round_robin_keeps_the_last_broker_when_it_is_the_only_one() -> None:
    strategy = MQFaultStrategy(ManualClock(0))
    only_a = [MessageQueue("T", "broker-a", i) for i in range(3)]
    info = publish_info(1, only_a)
    # Indexes 1..3 find no other broker; index 4 is then taken regardless.
    assert strategy.select_one_message_queue(info, "broker-a") == only_a[1]


def test_selection_avoids_an_unavailable_broker() -> None:
    _, strategy = make()
    strategy.update_fault_item("broker-a", 1000, isolation=False)
    info = publish_info(1)
    picks = {strategy.select_one_message_queue(info, None).broker_name for _ in range(8)}
    assert picks == {"broker-b"}


def test_when_all_are_unavailable_the_least_bad_broker_is_picked() -> None:
    clock, strategy = make()
    strategy.update_fault_item("broker-a", 3000, isolation=False)
    strategy.update_fault_item("broker-b", 600, isolation=False)
    assert strategy.latency_fault_tolerance.pick_one_at_least() == "broker-b"
    # Indexes 1..4 find nothing; the round robin then takes index 2 for the topic, and
    # index 3 numbers the queue on broker-b: 3 % 2 write queues = 1.
    info = publish_info(1)
    assert strategy.select_one_message_queue(info, None) == MessageQueue("T", "broker-b", 1)
    clock.advance(30_000)
    assert strategy.select_one_message_queue(info, None).broker_name == "broker-b"


def test_least_bad_broker_not_serving_the_topic_is_forgotten() -> None:
    _, strategy = make()
    tolerance = strategy.latency_fault_tolerance
    for broker in ("broker-a", "broker-b"):
        strategy.update_fault_item(broker, 3000, isolation=False)
    strategy.update_fault_item("broker-other", 600, isolation=False)
    info = publish_info(1)
    # Indexes 1..4 find nothing, broker-other is dropped, and index 2 decides.
    assert strategy.select_one_message_queue(info, None) == QUEUES[2]
    assert tolerance.is_available("broker-other")  # removed from the table
    assert not tolerance.is_available("broker-a")


def test_pick_one_at_least_rotates_over_the_better_half() -> None:
    clock = ManualClock(0)
    tolerance = LatencyFaultTolerance(clock, which_item_worst=index_from(2))
    assert tolerance.pick_one_at_least() is None
    tolerance.update_fault_item("slow", 3000, 180_000)
    assert tolerance.pick_one_at_least() == "slow"  # one item: that one
    for name, latency in (("best", 100), ("good", 200), ("bad", 2000)):
        tolerance.update_fault_item(name, latency, 30_000)
    # Four items, all unavailable: sorted by latency, the better half is [best, good], and the
    # rotating index (2, 3, 4, 5; the one-item call above did not use it) picks among them.
    assert [tolerance.pick_one_at_least() for _ in range(4)] == ["best", "good", "best", "good"]
    # Available items sort first whatever their latency: [good, bad | best, slow].
    clock.advance(60_000)
    tolerance.update_fault_item("best", 100, 600_000)
    assert tolerance.pick_one_at_least() == "good"
    assert tolerance.pick_one_at_least() == "bad"


def test_thread_local_index_wraps_like_a_java_int() -> None:
    index = index_from(2**31 - 1)
    assert [index.increment_and_get() for _ in range(3)] == [2**31 - 1, 0, 1]


def test_fault_selection_survives_the_index_wrapping() -> None:
    _, strategy = make()
    strategy.update_fault_item("broker-a", 1000, isolation=False)
    info = publish_info(2**31 - 2)
    picks = [strategy.select_one_message_queue(info, None) for _ in range(6)]
    assert {mq.broker_name for mq in picks} == {"broker-b"}


def test_mismatched_tables_are_rejected() -> None:
    with pytest.raises(ValueError, match="not_available_duration_ms"):
        MQFaultStrategy(ManualClock(0), latency_max_ms=[1, 2], not_available_duration_ms=[0])
