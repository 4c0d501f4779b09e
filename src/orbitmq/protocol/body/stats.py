"""Admin statistics: ``TopicStatsTable`` (GET_TOPIC_STATS_INFO 202), ``ConsumeStats``
(GET_CONSUME_STATS 208) and ``BrokerStatsData`` (VIEW_BROKER_STATS_DATA 315). The first two
tables are keyed by MessageQueue; fastjson writes such a key as the queue's JSON object,
unquoted, and we read that and write the key as a JSON string."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from orbitmq.common import MessageQueue
from orbitmq.protocol.body.json_codec import Body
from orbitmq.protocol.body.offset import TOPIC_GROUP_SEPARATOR

#: VIEW_BROKER_STATS_DATA's name of the messages a group pulled (RocketMQ's
#: BrokerStatsManager), keyed by ``group_get_nums_key``.
GROUP_GET_NUMS: Final = "GROUP_GET_NUMS"


def group_get_nums_key(topic: str, group: str) -> str:
    """GROUP_GET_NUMS's key: ``topic@group``."""
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


@dataclass(slots=True)
class TopicOffset(Body):
    """A queue's offset range and the store time of its last message."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True)
class TopicStatsTable(Body):
    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)


@dataclass(slots=True)
class OffsetWrapper(Body):
    """A queue's max offset, the group's committed offset and its last consume time."""

    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0


@dataclass(slots=True)
class ConsumeStats(Body):
    """A group's progress on each queue of one broker, and its consume rate."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0

    def total_diff(self) -> int:
        """Messages not yet consumed, over every queue."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())


@dataclass(slots=True)
class BrokerStatsItem(Body):
    """One window of a broker statistic: the total added in it, per second, and per add."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(slots=True)
class BrokerStatsData(Body):
    """A broker statistic over the last minute, hour and day (sampled every 10 s, 10 min
    and hour)."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)
