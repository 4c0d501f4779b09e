"""``MessageSelector``: what a consumer subscribes with, a tag expression or an SQL92
expression (RocketMQ's ``MessageSelector.byTag`` / ``bySql``)::

    consumer.subscribe("Orders", sql("amount > 100 AND region = 'eu'"))
    consumer.subscribe("Orders", tag("TagA || TagB"))    # the same as "TagA || TagB"

An SQL92 expression is parsed when ``sql`` is called, so a typo fails there, with its line
and column; the broker checks it again when the consumer starts (CHECK_CLIENT_CONFIG).
"""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.common import EXPRESSION_TYPE_SQL92, EXPRESSION_TYPE_TAG, SUB_ALL
from orbitmq.filter import SubscriptionData, build_subscription, parse_sql92


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """An expression and its type ("TAG" or "SQL92"). Immutable."""

    expression_type: str
    expression: str

    def subscription(self, topic: str, sub_version: int) -> SubscriptionData:
        """The subscription of ``topic`` this selector makes."""
        return build_subscription(topic, self.expression, self.expression_type, sub_version)


def sql(expression: str) -> MessageSelector:
    """Messages whose properties make ``expression`` TRUE (the broker must run with
    ``enablePropertyFilter=true``). Raises Sql92ParseError for a bad expression."""
    parse_sql92(expression)
    return MessageSelector(EXPRESSION_TYPE_SQL92, expression)


def tag(expression: str = SUB_ALL) -> MessageSelector:
    """Messages whose tag is one of ``"TagA || TagB"`` (``"*"``: every message)."""
    return MessageSelector(EXPRESSION_TYPE_TAG, expression)


def selector_of(expression: str | MessageSelector) -> MessageSelector:
    """A plain string is a tag expression, as in RocketMQ's ``subscribe(topic, String)``."""
    return expression if isinstance(expression, MessageSelector) else tag(expression)
