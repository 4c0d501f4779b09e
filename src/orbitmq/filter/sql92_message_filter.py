"""The broker's SQL92 ``MessageFilter`` (RocketMQ's ``ExpressionMessageFilter`` and
``ExpressionForRetryMessageFilter`` for SQL92), and the reader that takes the properties an
expression needs straight out of a stored record.

A stored record's properties are its last bytes (``name\\x01value\\x02`` pairs, UTF-8):
the reader jumps over the body and topic by their lengths and looks for the few names the
expression reads, so neither the body nor the other properties are ever decoded.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from orbitmq.common import message_const as mc
from orbitmq.common.record_layout import (
    BODYLEN_POSITION_V4,
    HOST_V6_EXTRA,
    SYSFLAG_POSITION,
)
from orbitmq.common.sys_flag import BORNHOST_V6_FLAG, STOREHOSTADDRESS_V6_FLAG
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.filter.sql92_expression import Sql92Expression
from orbitmq.filter.tag_filter import TagMessageFilter

_INT: Final = struct.Struct(">i")
_SHORT: Final = struct.Struct(">h")
_PAIR_END: Final = mc.PROPERTY_SEPARATOR.encode()
_NAME_END: Final = mc.NAME_VALUE_SEPARATOR.encode()


def record_properties_bytes(record: memoryview) -> bytes:
    """The PROPERTIES field of one stored record, undecoded."""
    sys_flag = _INT.unpack_from(record, SYSFLAG_POSITION)[0]
    position = BODYLEN_POSITION_V4
    if sys_flag & BORNHOST_V6_FLAG:
        position += HOST_V6_EXTRA
    if sys_flag & STOREHOSTADDRESS_V6_FLAG:
        position += HOST_V6_EXTRA
    position += 4 + _INT.unpack_from(record, position)[0]
    position += 1 + record[position]
    length = _SHORT.unpack_from(record, position)[0]
    position += 2
    return bytes(record[position : position + length])


class PropertyPicker:
    """Finds named properties in a raw property string without splitting all of it (one
    C-level search per name). When a name occurs twice the last wins, as in RocketMQ's
    ``decodeProperties`` map. Immutable; safe across threads."""

    __slots__ = ("_keys",)

    def __init__(self, names: frozenset[str]) -> None:
        self._keys = tuple(
            (name, _PAIR_END + name.encode() + _NAME_END, name.encode() + _NAME_END)
            for name in sorted(names)
        )

    def pick(self, raw: bytes) -> dict[str, str]:
        found: dict[str, str] = {}
        for name, inner, first in self._keys:
            at = raw.rfind(inner)
            if at >= 0:
                start = at + len(inner)
            elif raw.startswith(first):
                start = len(first)
            else:
                continue
            end = raw.find(_PAIR_END, start)
            found[name] = raw[start : end if end >= 0 else len(raw)].decode(errors="replace")
        return found


#: (topic, group) -> that group's compiled SQL92 filter for the topic, if registered.
FilterLookup = Callable[[str, str], Sql92Expression | None]


class Sql92MessageFilter:
    """Matches stored records against one compiled SQL92 expression. Every consume-queue
    unit passes (there is no filter bitmap); the commit-log check reads the record's
    properties. A record whose expression is unknown or fails is not delivered. Immutable;
    safe across tasks and threads."""

    matches_all: Final = False

    def __init__(self, expression: Sql92Expression) -> None:
        self.expression = expression
        self._picker = PropertyPicker(expression.property_names)
        self._matches = expression.matches

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        del tags_code
        return True

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        return self._matches(self._picker.pick(record_properties_bytes(record)))

    def is_matched_by_properties_bytes(self, raw: bytes) -> bool:
        """The same check on a record's PROPERTIES field already read."""
        return self._matches(self._picker.pick(raw))


class RetrySql92MessageFilter:
    """``ExpressionForRetryMessageFilter`` for a group's ``%RETRY%`` topic: each retried
    message is judged by the group's filter for its original topic (the RETRY_TOPIC
    property); a message whose topic has no SQL92 filter in the group passes. Keeps the
    filters it looked up for its one read; use from the broker's loop."""

    matches_all: Final = False
    _RETRY_TOPIC: Final = PropertyPicker(frozenset({mc.PROPERTY_RETRY_TOPIC}))

    def __init__(
        self, retry_topic: str, lookup: FilterLookup, tag_filter: TagMessageFilter
    ) -> None:
        self.group = retry_topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        self._lookup = lookup
        self._tag_filter = tag_filter
        self._filters: dict[str, Sql92MessageFilter | None] = {}

    def is_matched_by_consume_queue(self, tags_code: int) -> bool:
        """The retry topic's own (TAG) subscription decides by tag code."""
        return self._tag_filter.is_matched_by_consume_queue(tags_code)

    def is_matched_by_commit_log(self, record: memoryview) -> bool:
        raw = record_properties_bytes(record)
        topic = self._RETRY_TOPIC.pick(raw).get(mc.PROPERTY_RETRY_TOPIC)
        if topic is None:
            return True
        if topic not in self._filters:
            expression = self._lookup(topic, self.group)
            self._filters[topic] = None if expression is None else Sql92MessageFilter(expression)
        message_filter = self._filters[topic]
        if message_filter is None:
            return True
        return message_filter.is_matched_by_properties_bytes(raw)


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
