"""StoreStatsService: the runtime info's put and get figures, formatted as RocketMQ's
StoreStatsService formats them (rates "10s 1min 10min", the latency distribution, the
percentiles over its buckets, the midnight totals)."""

from __future__ import annotations

import datetime as dt

import pytest

from orbitmq.broker.broker_stats_manager import BrokerStatsManager
from orbitmq.broker.store_stats_service import LATENCY_BOUNDS_MS, StoreStatsService
from orbitmq.testing import ManualClock


def _local_ms(day: int, hour: int, minute: int = 0) -> int:
    return int(dt.datetime(2024, 1, day, hour, minute).timestamp() * 1000)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(_local_ms(10, 23, 58))


@pytest.fixture
def broker_stats(clock: ManualClock) -> BrokerStatsManager:
    return BrokerStatsManager("c", clock=clock)


@pytest.fixture
def stats(broker_stats: BrokerStatsManager, clock: ManualClock) -> StoreStatsService:
    return StoreStatsService(broker_stats, clock=clock)


def test_latency_buckets_are_rocketmqs() -> None:
    assert len(LATENCY_BOUNDS_MS) == 75
    assert LATENCY_BOUNDS_MS[:3] == (1, 2, 3)
    assert LATENCY_BOUNDS_MS[19:22] == (20, 22, 24)
    assert LATENCY_BOUNDS_MS[-2:] == (9000, 10_000)


def test_put_latency_distribution_and_maximum(stats: StoreStatsService) -> None:
    for elapsed in (0, 3, 9, 10, 49, 120, 999, 1000, 9999, 10_000, 25_000):
        stats.on_put(elapsed, ok=True)
    stats.on_put(1, ok=False)
    assert stats.distribution_text() == (
        "[<=0ms]:1 [0~10ms]:3 [10~50ms]:2 [50~100ms]:0 [100~200ms]:1 [200~500ms]:0 "
        "[500ms~1s]:1 [1~2s]:1 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:1 [10s~]:2 "
    )
    assert stats.put_entire_time_max_ms == 25_000
    assert stats.put_failed_times == 1


def test_percentiles_interpolate_inside_the_bucket(stats: StoreStatsService) -> None:
    for _ in range(100):
        stats.on_put(5, ok=True)  # the (4, 5] bucket
    assert stats.put_latency(0.99) == pytest.approx(4.99)
    stats.on_put(300, ok=True)
    assert 4 < stats.put_latency(0.5) <= 5
    assert stats.put_latency(0.999) == 5.0  # one slow put in 101 is past the 99.9th
    assert stats.put_latency(1.0) == 300.0  # the (250, 300] bucket's top


def test_rates_are_per_second_over_the_sampled_windows(
    stats: StoreStatsService, broker_stats: BrokerStatsManager, clock: ManualClock
) -> None:
    assert stats.tps_text(1) == "  "  # no two samples yet: RocketMQ's empty rates
    stats.sampling()
    for _ in range(20):
        clock.advance(1000)
        broker_stats.on_put("T", 10, 100)
        broker_stats.on_get("T", "g", 2, 20, latency_ms=1)
        stats.on_get(found=2, elapsed_ms=1)
        stats.on_get(found=0, elapsed_ms=0)
        stats.sampling()
    assert stats.tps_text(1) == "10.0 10.0 10.0"  # 10 s, 1 min (20 s so far), 10 min
    assert stats.tps_text(4) == "2.0 2.0 2.0"  # messages transferred
    assert stats.get_total_tps_text() == "2.0 2.0 2.0"  # found + missed pulls
    assert stats.put_times_total == 200
    assert stats.put_size_total == 2000
    assert stats.get_transferred == 40


def test_midnight_rolls_the_day_totals(
    stats: StoreStatsService, broker_stats: BrokerStatsManager, clock: ManualClock
) -> None:
    broker_stats.on_put("T", 7, 70)
    broker_stats.on_get("T", "g", 3, 30, latency_ms=0)
    stats.sampling()
    assert stats.msg_totals_today_morning == (0, 0)
    clock.set(_local_ms(11, 0, 1))
    stats.sampling()
    assert stats.msg_totals_today_morning == (7, 3)
    assert stats.msg_totals_yesterday_morning == (0, 0)
    clock.set(_local_ms(12, 0, 1))
    stats.sampling()
    assert stats.msg_totals_yesterday_morning == (7, 3)


def test_runtime_text(stats: StoreStatsService, clock: ManualClock) -> None:
    clock.advance(((2 * 24 + 3) * 60 + 4) * 60_000 + 5000)
    assert stats.runtime_text() == "[ 2 days, 3 hours, 4 minutes, 5 seconds ]"
