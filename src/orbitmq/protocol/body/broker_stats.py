"""The bodies of the broker's statistics answers: ``BrokerStatsData`` (VIEW_BROKER_STATS_DATA
315) and ``ConsumeStatsList`` (GET_BROKER_CONSUME_STATS 317), as RocketMQ 4.9's fastjson
writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from orbitmq.protocol.body.json_codec import Body
from orbitmq.protocol.body.offset import TOPIC_GROUP_SEPARATOR
from orbitmq.protocol.body.stats import ConsumeStats

# The stats names VIEW_BROKER_STATS_DATA answers (RocketMQ's BrokerStatsManager): by topic,
# by ``stats_key(topic, group)``, or by the cluster's name (BROKER_*).
TOPIC_PUT_NUMS: Final = "TOPIC_PUT_NUMS"
TOPIC_PUT_SIZE: Final = "TOPIC_PUT_SIZE"
GROUP_GET_NUMS: Final = "GROUP_GET_NUMS"
GROUP_GET_SIZE: Final = "GROUP_GET_SIZE"
GROUP_GET_LATENCY: Final = "GROUP_GET_LATENCY"
SNDBCK_PUT_NUMS: Final = "SNDBCK_PUT_NUMS"
BROKER_PUT_NUMS: Final = "BROKER_PUT_NUMS"
BROKER_GET_NUMS: Final = "BROKER_GET_NUMS"


def stats_key(topic: str, group: str) -> str:
    """The key of a statistic by topic and group (GROUP_GET_NUMS, ...): ``topic@group``."""
    return f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"


@dataclass(slots=True)
class BrokerStatsItem(Body):
    """One window of a counter: its growth (``sum``), that growth per second (``tps``) and
    per call (``avgpt``: average size, messages or latency of one call)."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(slots=True)
class BrokerStatsData(Body):
    """A counter over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)


@dataclass(slots=True)
class ConsumeStatsList(Body):
    """Every subscription group's progress on one broker: a list of one-entry maps (group to
    its ConsumeStats per topic), as RocketMQ builds it, and the summed lag."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str = ""
    total_diff: int = 0
