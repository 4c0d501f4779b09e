"""BrokerStatsManager: RocketMQ's stats names and keys, and the minute / hour / day windows
(sum, tps, avgpt) computed from 10 s, 10 min and 1 h samples, as RocketMQ's StatsItem."""

from __future__ import annotations

import pytest

from orbitmq.broker.broker_stats_manager import BrokerStatsManager, StatsSnapshot
from orbitmq.protocol.body.broker_stats import (
    BROKER_GET_NUMS,
    BROKER_PUT_NUMS,
    GROUP_GET_LATENCY,
    GROUP_GET_NUMS,
    GROUP_GET_SIZE,
    SNDBCK_PUT_NUMS,
    TOPIC_PUT_NUMS,
    TOPIC_PUT_SIZE,
)
from orbitmq.testing import ManualClock


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1_700_000_000_000)


@pytest.fixture
def stats(clock: ManualClock) -> BrokerStatsManager:
    return BrokerStatsManager("DefaultCluster", clock=clock)


def test_the_minute_window_is_the_growth_over_the_last_samples(
    stats: BrokerStatsManager, clock: ManualClock
) -> None:
    stats.on_put("T", 1, 100)
    stats.on_put("T", 3, 300)  # a batch: one call, three messages
    stats.sampling_in_seconds()  # first sample: seeded with zeros 10 s back
    item = stats.get_stats_item(TOPIC_PUT_NUMS, "T")
    assert item is not None
    assert item.stats_data_in_minute() == StatsSnapshot(sum=4, tps=0.4, avgpt=2.0, times=2)
    size = stats.get_stats_item(TOPIC_PUT_SIZE, "T")
    assert size is not None and size.stats_data_in_minute().sum == 400
    assert size.stats_data_in_minute().avgpt == 200.0

    clock.advance(10_000)
    stats.on_put("T", 6, 600)
    stats.sampling_in_seconds()
    assert item.stats_data_in_minute() == StatsSnapshot(sum=10, tps=0.5, avgpt=10 / 3, times=3)
    # Seven samples (one minute) are kept: the oldest growth leaves the window.
    for _ in range(6):
        clock.advance(10_000)
        stats.sampling_in_seconds()
    assert item.stats_data_in_minute().sum == 0
    # The hour and day windows have their own samples.
    assert item.stats_data_in_hour() == StatsSnapshot()
    stats.sampling_in_minutes()
    stats.sampling_in_hour()
    assert item.stats_data_in_hour().sum == 10
    assert item.stats_data_in_day().sum == 10


def test_group_get_keys_are_topic_at_group_and_broker_keys_the_cluster(
    stats: BrokerStatsManager,
) -> None:
    stats.on_get("T", "g", 5, 500, latency_ms=4)
    stats.on_get("T", "g", 1, 100, latency_ms=2)
    stats.on_put("T", 2, 20)
    stats.on_send_back("T", "g")
    stats.sampling_in_seconds()

    def minute(name: str, key: str) -> StatsSnapshot:
        item = stats.get_stats_item(name, key)
        assert item is not None, (name, key)
        return item.stats_data_in_minute()

    assert minute(GROUP_GET_NUMS, "T@g").sum == 6
    assert minute(GROUP_GET_SIZE, "T@g").sum == 600
    assert minute(GROUP_GET_LATENCY, "T@g").avgpt == 3.0  # average latency per pull
    assert minute(SNDBCK_PUT_NUMS, "T@g").sum == 1
    # RocketMQ adds to the broker counters' value only: no calls, so avgpt is 0.
    assert minute(BROKER_PUT_NUMS, "DefaultCluster") == StatsSnapshot(sum=2, tps=0.2)
    assert minute(BROKER_GET_NUMS, "DefaultCluster").sum == 6
    assert stats.tps_group_get_nums("g", "T") == pytest.approx(0.6)
    assert stats.tps_group_get_nums("other", "T") == 0.0


@pytest.mark.parametrize(
    ("name", "key"),
    [
        (TOPIC_PUT_NUMS, "Never"),
        (GROUP_GET_NUMS, "T"),
        (BROKER_PUT_NUMS, "OtherCluster"),
        ("NO_SUCH_STATS", "T"),
    ],
)
def test_unknown_names_and_keys_have_no_item(
    stats: BrokerStatsManager, name: str, key: str
) -> None:
    stats.on_put("T", 1, 1)
    assert stats.get_stats_item(name, key) is None
