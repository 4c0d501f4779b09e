"""Tag subscriptions: ``"*"`` or ``"TagA || TagB"`` parsed into tags and their hash codes
(RocketMQ's ``FilterAPI`` / ``SubscriptionData``), and the ``MessageFilter`` that compares
consume-queue tag codes with them (RocketMQ's ``ExpressionMessageFilter`` for TAG)."""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.common import EXPRESSION_TYPE_TAG, SUB_ALL, OrbitError, java_string_hash


class SubscriptionParseError(OrbitError, ValueError):
    """A subscription expression that cannot be parsed (SUBSCRIPTION_PARSE_FAILED)."""


def is_tag_type(expression_type: str | None) -> bool:
    """RocketMQ's ``ExpressionType.isTagType``: no type given means TAG."""
    return expression_type is None or expression_type == EXPRESSION_TYPE_TAG


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    """What a consumer subscribed to in one topic: the expression as sent, and for TAG
    expressions its tags and their Java hash codes. Immutable; safe to share."""

    topic: str
    sub_string: str = SUB_ALL
    tags_set: frozenset[str] = field(default_factory=frozenset)
    code_set: frozenset[int] = field(default_factory=frozenset)
    expression_type: str = EXPRESSION_TYPE_TAG
    sub_version: int = 0

    @property
    def is_sub_all(self) -> bool:
        return self.sub_string == SUB_ALL


def build_subscription_data(
    topic: str, sub_string: str | None, sub_version: int = 0
) -> SubscriptionData:
    """A TAG subscription (``FilterAPI.buildSubscriptionData``): None, empty or ``*`` is
    every message; otherwise tags separated by ``||``, trimmed, empty ones dropped."""
    if not sub_string or sub_string == SUB_ALL:
        return SubscriptionData(topic, SUB_ALL, sub_version=sub_version)
    tags = [t.strip() for t in sub_string.split("||")]
    tags = [t for t in tags if t]
    return SubscriptionData(
        topic,
        sub_string,
        frozenset(tags),
        frozenset(java_string_hash(t) for t in tags),
        sub_version=sub_version,
    )


def build_subscription(
    topic: str, sub_string: str | None, expression_type: str | None, sub_version: int = 0
) -> SubscriptionData:
    """``FilterAPI.build``: TAG expressions are parsed; other types (SQL92) are kept as
    text, and must not be empty. Raises SubscriptionParseError."""
    if is_tag_type(expression_type):
        return build_subscription_data(topic, sub_string, sub_version)
    if not sub_string:
        raise SubscriptionParseError(f"the {expression_type} expression is empty")
    assert expression_type is not None
    return SubscriptionData(
        topic, sub_string, expression_type=expression_type, sub_version=sub_version
    )


def _int32(value: int) -> int:
    """Java's ``Long.intValue()``: the low 32 bits, signed."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class TagMessageFilter:
    """Matches consume-queue tag codes against a TAG subscription; everything that passes
    the consume queue passes the commit log (tags are not re-checked by name, as in
    RocketMQ: a hash collision delivers a message the client then drops). Immutable."""

    def __init__(self, subscription: SubscriptionData | None) -> None:
        self.subscription = subscription
        #: Every message matches, by consume queue and by commit log: no subscription,
        #: ``*``, or an expression that is not TAG (not this filter's to evaluate).
        self.matches_all = (
            subscription is None
            or subscription.is_sub_all
            or not is_tag_type(subscription.expression_type)
        )

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        sub = self.subscription
        if self.matches_all or sub is None:
            return True
        return _int32(tags_code) in sub.code_set

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        del record
        return True
