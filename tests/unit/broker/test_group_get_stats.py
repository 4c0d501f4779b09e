"""``GroupGetStats``: the messages a broker's pulls handed out, by group, topic and queue, and
the GROUP_GET_NUMS counters VIEW_BROKER_STATS_DATA reads."""

from __future__ import annotations

import threading

from orbitmq.broker.group_get_stats import GroupGetStats
from orbitmq.protocol import BrokerStatsItem
from orbitmq.testing import ManualClock


def test_totals_by_group_topic_and_queue() -> None:
    stats = GroupGetStats()
    stats.inc_group_get_nums("g", "T", 0, 3)
    stats.inc_group_get_nums("g", "T", 1, 2)
    stats.inc_group_get_nums("g", "T", 0, 1)
    stats.inc_group_get_nums("other", "T", 0, 7)
    stats.inc_group_get_nums("g", "U", 0, 5)
    stats.inc_group_get_nums("g", "T", 1, 0)  # an empty pull adds nothing
    assert stats.group_get_nums("g", "T") == 6
    assert stats.group_get_nums("g", "T", 0) == 4
    assert stats.group_get_nums("g", "T", 1) == 2
    assert stats.group_get_nums("g", "T", 2) == 0
    assert stats.group_get_nums("nobody", "T") == 0


def test_counts_from_several_threads_add_up() -> None:
    stats = GroupGetStats()

    def add() -> None:
        for _ in range(1000):
            stats.inc_group_get_nums("g", "T", 0, 1)

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert stats.group_get_nums("g", "T") == 4000


def test_a_counter_per_topic_and_group_for_view_broker_stats_data() -> None:
    clock = ManualClock()
    stats = GroupGetStats(clock)
    assert stats.stats_item("T@g") is None  # nothing pulled: RocketMQ has no item either
    stats.inc_group_get_nums("g", "T", 0, 3)
    stats.inc_group_get_nums("g", "T", 1, 2)
    stats.inc_group_get_nums("other", "T", 0, 7)
    stats.sampling_in_seconds()
    item = stats.stats_item("T@g")
    assert item is not None
    assert item.stats_data_in_minute() == BrokerStatsItem(sum=5, tps=0.5, avgpt=2.5)
