"""``ConsumerFilterManager``: the compiled SQL92 filter of each (topic, consumer group) as the
group's heartbeats declare it (RocketMQ's ``ConsumerFilterManager`` and
``ConsumerFilterData``), read by pulls that do not carry their subscription.

RocketMQ also keeps a bloom-filter bit position per filter (for ``enableCalcFilterBitMap``)
and persists the table to consumerFilter.json; neither is kept here: filters are evaluated
on the commit log's properties (docs/design/filters.md), and a heartbeat after a restart
registers them again before the consumer's next pull can need them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from orbitmq.common import EXPRESSION_TYPE_SQL92
from orbitmq.filter import (
    Sql92Expression,
    SubscriptionData,
    SubscriptionParseError,
    is_tag_type,
    parse_sql92,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConsumerFilterData:
    """One group's filter on one topic: the expression as sent, its type, the client's
    subscription version, and the compiled expression."""

    consumer_group: str
    topic: str
    expression: str
    expression_type: str
    client_version: int
    compiled: Sql92Expression


def build_consumer_filter_data(
    topic: str, group: str, expression: str, expression_type: str, client_version: int
) -> ConsumerFilterData:
    """``ConsumerFilterManager.build``: compile an SQL92 subscription; raises
    SubscriptionParseError (Sql92ParseError, with the position, for a bad expression)."""
    if expression_type != EXPRESSION_TYPE_SQL92:
        raise SubscriptionParseError(f"unknown expression type {expression_type!r}")
    return ConsumerFilterData(
        group, topic, expression, expression_type, client_version, parse_sql92(expression)
    )


class ConsumerFilterManager:
    """topic -> group -> ConsumerFilterData. Registration replaces a filter when the
    expression changed or the client's version is not older. Event-loop confined."""

    def __init__(self) -> None:
        self._table: dict[str, dict[str, ConsumerFilterData]] = {}

    def register(self, group: str, subscriptions: Iterable[SubscriptionData]) -> None:
        """Record the SQL92 subscriptions of a heartbeat. One that does not compile is
        logged and left out: the group's pulls then answer FILTER_DATA_NOT_EXIST, as
        RocketMQ's do (a client that checked its subscription first never sends one)."""
        for sub in subscriptions:
            if is_tag_type(sub.expression_type):
                self._unregister(sub.topic, group)
                continue
            old = self.get(sub.topic, group)
            if (
                old is not None
                and old.expression == sub.sub_string
                and old.client_version >= sub.sub_version
            ):
                continue
            try:
                data = build_consumer_filter_data(
                    sub.topic, group, sub.sub_string, sub.expression_type, sub.sub_version
                )
            except SubscriptionParseError as exc:
                log.error(
                    "Compile %s filter of %s@%s failed: %s",
                    sub.expression_type,
                    group,
                    sub.topic,
                    exc,
                )
                continue
            self._table.setdefault(sub.topic, {})[group] = data

    def _unregister(self, topic: str, group: str) -> None:
        groups = self._table.get(topic)
        if groups is not None and groups.pop(group, None) is not None and not groups:
            del self._table[topic]

    def get(self, topic: str, group: str) -> ConsumerFilterData | None:
        groups = self._table.get(topic)
        return None if groups is None else groups.get(group)

    def get_expression(self, topic: str, group: str) -> Sql92Expression | None:
        data = self.get(topic, group)
        return None if data is None else data.compiled
