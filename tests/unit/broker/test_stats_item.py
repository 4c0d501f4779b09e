"""``StatsItem``: a counter sampled into minute, hour and day windows, as RocketMQ's."""

from __future__ import annotations

from orbitmq.broker.stats_item import StatsItem
from orbitmq.protocol import BrokerStatsItem


def test_a_window_reports_what_was_added_between_its_first_and_last_sample() -> None:
    item = StatsItem()
    assert item.stats_data_in_minute() == BrokerStatsItem()  # never sampled
    item.add_value(6, 2)
    # The first sample is preceded by a zero one a period (10 s) earlier.
    item.sampling_in_seconds(100_000)
    assert item.stats_data_in_minute() == BrokerStatsItem(sum=6, tps=0.6, avgpt=3.0)
    item.add_value(4, 2)
    item.sampling_in_seconds(110_000)
    assert item.stats_data_in_minute() == BrokerStatsItem(sum=10, tps=0.5, avgpt=2.5)
    # The hour and day windows are sampled on their own clocks (10 min, 1 h).
    item.sampling_in_minutes(110_000)
    assert item.stats_data_in_hour() == BrokerStatsItem(sum=10, tps=10 / 600, avgpt=2.5)
    item.sampling_in_hour(110_000)
    assert item.stats_data_in_day() == BrokerStatsItem(sum=10, tps=10 / 3600, avgpt=2.5)


def test_the_minute_window_keeps_seven_samples() -> None:
    item = StatsItem()
    for i in range(6):
        item.add_value(1, 1)
        item.sampling_in_seconds(10_000 * (i + 1))
    # Samples at 0 (the zero one), 10 s, ..., 60 s: all 6 additions.
    assert item.stats_data_in_minute() == BrokerStatsItem(sum=6, tps=0.1, avgpt=1.0)
    item.add_value(1, 1)
    item.sampling_in_seconds(70_000)
    # The zero sample is gone: from 10 s (1 added) to 70 s (7 added).
    assert item.stats_data_in_minute() == BrokerStatsItem(sum=6, tps=0.1, avgpt=1.0)
    item.sampling_in_seconds(80_000)
    assert item.stats_data_in_minute() == BrokerStatsItem(sum=5, tps=5 / 60, avgpt=1.0)
