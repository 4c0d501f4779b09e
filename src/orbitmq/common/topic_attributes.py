"""Topic attributes as RocketMQ 5 keeps them (``TopicAttributes``, ``AttributeParser``,
``AttributeUtil``): the known keys with their allowed values, the modification syntax that
UPDATE_AND_CREATE_TOPIC's ``attributes`` header and ``mqadmin updateTopic -a`` carry
(``+key=value`` adds or changes, ``-key`` deletes, comma separated), and how a modification
is applied to a topic's current attributes.

Plain functions and immutable definitions; safe from any thread.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from orbitmq.common.errors import OrbitError
from orbitmq.common.topic_message_type import TopicMessageType

ADD_SIGN: Final = "+"
DELETE_SIGN: Final = "-"
KEY_VALUE_SIGN: Final = "="
SEPARATOR: Final = ","


class TopicAttributeError(OrbitError, ValueError):
    """An attribute modification RocketMQ 5 refuses; the message names the key, the value
    and what is allowed."""


@dataclass(frozen=True, slots=True)
class EnumAttribute:
    """An attribute whose value is one of a fixed set (RocketMQ's ``EnumAttribute``).
    ``changeable`` False: set only when the topic is created."""

    name: str
    changeable: bool
    universe: frozenset[str]
    default: str

    def verify(self, value: str) -> None:
        if value not in self.universe:
            raise TopicAttributeError(
                f"value is not in set: {self.name}={value!r}, allowed: "
                + ", ".join(sorted(self.universe))
            )


@dataclass(frozen=True, slots=True)
class LongRangeAttribute:
    """An attribute whose value is a whole number in [min_value, max_value]
    (RocketMQ's ``LongRangeAttribute``)."""

    name: str
    changeable: bool
    min_value: int
    max_value: int
    default: int

    def verify(self, value: str) -> None:
        try:
            number = int(value)
        except ValueError:
            raise TopicAttributeError(f"{self.name}={value!r} is not a whole number") from None
        if not self.min_value <= number <= self.max_value:
            raise TopicAttributeError(
                f"value is not in range({self.min_value}, {self.max_value}): {self.name}={number}"
            )


Attribute = EnumAttribute | LongRangeAttribute

#: The consume queue's kind; fixed at creation. OrbitMQ keeps and shows it; its store has
#: the one kind, SimpleCQ.
QUEUE_TYPE_ATTRIBUTE: Final = EnumAttribute(
    "queue.type", False, frozenset({"BatchCQ", "SimpleCQ"}), "SimpleCQ"
)
#: Deletion by age or compaction by key; fixed at creation. Kept and shown; OrbitMQ's
#: retention deletes by age.
CLEANUP_POLICY_ATTRIBUTE: Final = EnumAttribute(
    "cleanup.policy", False, frozenset({"DELETE", "COMPACTION"}), "DELETE"
)
#: What a topic accepts; may change. Absent means NORMAL.
TOPIC_MESSAGE_TYPE_ATTRIBUTE: Final = EnumAttribute(
    "message.type",
    True,
    frozenset(t.value for t in TopicMessageType),
    TopicMessageType.NORMAL.value,
)
#: Tiered storage's reserve time in hours (-1: the store's default); may change. Kept and
#: shown.
TOPIC_RESERVE_TIME_ATTRIBUTE: Final = LongRangeAttribute("reserve.time", True, -1, 2**63 - 1, -1)
#: Every attribute a topic may carry, by key (RocketMQ 5's ``TopicAttributes.ALL``).
TOPIC_ATTRIBUTES: Final[Mapping[str, Attribute]] = {
    a.name: a
    for a in (
        QUEUE_TYPE_ATTRIBUTE,
        CLEANUP_POLICY_ATTRIBUTE,
        TOPIC_MESSAGE_TYPE_ATTRIBUTE,
        TOPIC_RESERVE_TIME_ATTRIBUTE,
    )
}


def parse_attributes_modification(text: str | None) -> dict[str, str]:
    """``+k1=v1,+k2=v2,-k3`` as a map from signed key to value ("" for a deletion), as
    RocketMQ's ``AttributeParser.parseToMap`` reads it; empty or None is no change.
    Raises TopicAttributeError on a piece that is neither ``+key=value`` nor ``-key``, or a
    key given twice."""
    if not text:
        return {}
    modification: dict[str, str] = {}
    for raw in text.split(SEPARATOR):
        piece = raw.strip()
        if KEY_VALUE_SIGN in piece:
            key, _, value = piece.partition(KEY_VALUE_SIGN)
            if not key.startswith(ADD_SIGN) or not value or KEY_VALUE_SIGN in value:
                raise TopicAttributeError(
                    f"add/alter attribute format is wrong: {piece!r}, expected +key=value"
                )
        else:
            key, value = piece, ""
            if not key.startswith(DELETE_SIGN):
                raise TopicAttributeError(
                    f"delete attribute format is wrong: {piece!r}, expected -key"
                )
        if key in modification:
            raise TopicAttributeError(f"key duplication: {key!r} is given twice in {text!r}")
        modification[key] = value
    return modification


def format_attributes(attributes: Mapping[str, str]) -> str:
    """The inverse of ``parse_attributes_modification`` (``AttributeParser.parseToString``):
    ``key=value`` pieces, a bare key for an empty value, comma separated, in key order."""
    return SEPARATOR.join(
        f"{key}{KEY_VALUE_SIGN}{value}" if value else key
        for key, value in sorted(attributes.items())
    )


def alter_attributes(
    create: bool,
    current: Mapping[str, str],
    modification: Mapping[str, str],
    known: Mapping[str, Attribute] = TOPIC_ATTRIBUTES,
) -> dict[str, str]:
    """A topic's attributes after ``modification`` (signed keys, as parsed), RocketMQ 5's
    ``AttributeUtil.alterCurrentAttributes``: creating a topic takes only additions; an
    update adds, changes and deletes, but deletes only keys the topic has and changes only
    changeable attributes; every key must be known and every value allowed. Raises
    TopicAttributeError naming the key."""
    result = dict(current)
    deleted: list[str] = []
    seen: set[str] = set()
    for signed_key, value in modification.items():
        sign, key = signed_key[:1], signed_key[1:]
        if not key or ADD_SIGN in key or DELETE_SIGN in key:
            raise TopicAttributeError(f"kv string format wrong: {signed_key!r}")
        if key in seen:
            raise TopicAttributeError(f"alter duplication key. key: {key}")
        seen.add(key)
        attribute = known.get(key)
        if attribute is None:
            raise TopicAttributeError(
                f"unsupported key: {key!r}, known keys: " + ", ".join(sorted(known))
            )
        if create and sign != ADD_SIGN:
            raise TopicAttributeError(
                f"only add attribute is supported while creating topic. key: {key}"
            )
        if sign == DELETE_SIGN:
            if key not in current:
                raise TopicAttributeError(f"attempt to delete a nonexistent key: {key}")
        elif sign != ADD_SIGN:
            raise TopicAttributeError(f"wrong format key: {signed_key!r}")
        if not create and not attribute.changeable:
            raise TopicAttributeError(
                f"attempt to update an unchangeable attribute. key: {key} (set only when the"
                " topic is created)"
            )
        if sign == DELETE_SIGN:
            deleted.append(key)
        else:
            attribute.verify(value)
            result[key] = value
    for key in deleted:
        result.pop(key, None)
    return result


def topic_message_type(attributes: Mapping[str, str] | None) -> TopicMessageType:
    """The type a topic accepts from its attributes (RocketMQ 5's
    ``TopicConfig.getTopicMessageType``): NORMAL when ``message.type`` is absent; None
    (no topic) is UNSPECIFIED, which no send passes; a value outside the set (a hand-edited
    topics.json) is UNSPECIFIED too."""
    if attributes is None:
        return TopicMessageType.UNSPECIFIED
    value = attributes.get(TOPIC_MESSAGE_TYPE_ATTRIBUTE.name)
    if value is None:
        return TopicMessageType.NORMAL
    try:
        return TopicMessageType(value)
    except ValueError:
        return TopicMessageType.UNSPECIFIED
