"""Admin statistics: ``TopicStatsTable`` (GET_TOPIC_STATS_INFO 202) and ``ConsumeStats``
(GET_CONSUME_STATS 208). Their tables are keyed by MessageQueue; fastjson writes such a key as
the queue's JSON object, unquoted, and we read that and write the key as a JSON string."""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.common import MessageQueue
from orbitmq.protocol.body.json_codec import Body


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
