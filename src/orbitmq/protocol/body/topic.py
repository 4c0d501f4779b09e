"""Topic configuration bodies: ``TopicConfig``, the ``TopicConfigSerializeWrapper`` that
GET_ALL_TOPIC_CONFIG (21) answers and topics.json holds, its ``DataVersion``, and the
``TopicList`` of the topic-list requests (GET_ALL_TOPIC_LIST_FROM_NAMESERVER 206 and others)."""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import orjson

from orbitmq.common.topic_attributes import topic_message_type
from orbitmq.common.topic_message_type import TopicMessageType
from orbitmq.protocol.body.errors import BodyError
from orbitmq.protocol.body.json_codec import Body
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE

#: RocketMQ's default queue counts for a new TopicConfig.
DEFAULT_READ_QUEUE_NUMS: Final = 16
DEFAULT_WRITE_QUEUE_NUMS: Final = 16


class TopicFilterType(enum.Enum):
    SINGLE_TAG = 0
    MULTI_TAG = 1


@dataclass(slots=True)
class TopicConfig(Body):
    """One topic on one broker: queue counts, permission, filter type, flags, order, and
    RocketMQ 5's ``attributes`` (``message.type`` and the others of
    ``orbitmq.common.topic_attributes``; empty for a topic made by a 4.x tool)."""

    topic_name: str = ""
    read_queue_nums: int = DEFAULT_READ_QUEUE_NUMS
    write_queue_nums: int = DEFAULT_WRITE_QUEUE_NUMS
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: TopicFilterType = TopicFilterType.SINGLE_TAG
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] = field(default_factory=dict)

    @property
    def topic_message_type(self) -> TopicMessageType:
        """The message type the topic accepts: its ``message.type``, NORMAL when unset."""
        return topic_message_type(self.attributes)

    def to_compact(self) -> str:
        """RocketMQ's space-separated form, used in compressed REGISTER_BROKER bodies:
        ``name readQueueNums writeQueueNums perm topicFilterType`` and, as RocketMQ 5 adds,
        the attributes as a JSON object (left out when there are none, so a 4.x reader
        sees its five fields; flags and order are not carried)."""
        text = (
            f"{self.topic_name} {self.read_queue_nums} {self.write_queue_nums} "
            f"{self.perm} {self.topic_filter_type.name}"
        )
        if self.attributes:
            text += " " + orjson.dumps(self.attributes, option=orjson.OPT_SORT_KEYS).decode()
        return text

    @classmethod
    def from_compact(cls, text: str) -> TopicConfig:
        parts = text.split(" ")
        if len(parts) < 5:
            raise BodyError(f"expected 5 space-separated topic config fields, got {text[:80]!r}")
        name, read, write, perm, filter_type = parts[:5]
        try:
            config = cls(name, int(read), int(write), int(perm), TopicFilterType[filter_type])
        except (ValueError, KeyError):
            raise BodyError(f"bad topic config {text[:80]!r}") from None
        if len(parts) > 5:
            # RocketMQ 5 ignores attributes it cannot read (a value with a space splits).
            config.attributes = _compact_attributes(parts[5])
        return config


def _compact_attributes(text: str) -> dict[str, str]:
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(value, Mapping):
        return {}
    return {str(k): str(v) for k, v in value.items()}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(slots=True)
class DataVersion(Body):
    """A version stamp for a broker's metadata: the time and a counter of changes."""

    timestamp: int = field(default_factory=_now_ms)
    counter: int = 0

    def next_version(self, timestamp_ms: int) -> None:
        """Record one more change at ``timestamp_ms``."""
        self.timestamp = timestamp_ms
        self.counter += 1


@dataclass(slots=True)
class TopicConfigSerializeWrapper(Body):
    """Every topic of a broker by name, with the version of that table."""

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)


@dataclass(slots=True)
class TopicList(Body):
    """Topic names; ``broker_addr`` is set only by the queries that name a broker."""

    topic_list: set[str] = field(default_factory=set)
    broker_addr: str | None = None
