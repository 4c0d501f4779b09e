"""Topic names: RocketMQ's system topics, group topic prefixes and name validation."""

from __future__ import annotations

import re
from typing import Final

AUTO_CREATE_TOPIC_KEY_TOPIC: Final = "TBW102"
RMQ_SYS_SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
RMQ_SYS_BENCHMARK_TOPIC: Final = "BenchmarkTest"
RMQ_SYS_TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
RMQ_SYS_TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
RMQ_SYS_TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
RMQ_SYS_SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
RMQ_SYS_OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"

SYSTEM_TOPICS: Final = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_BENCHMARK_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRACE_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)

#: RocketMQ's limit: the stored record keeps the topic length in one signed byte.
TOPIC_MAX_LENGTH: Final = 127
_VALID_TOPIC: Final = re.compile(r"[%|a-zA-Z0-9_-]+")


def topic_problem(topic: str) -> str | None:
    """Why ``topic`` is not a valid topic name, or None when it is.

    The rules are RocketMQ's ``TopicValidator``: 1 to 127 characters from letters, digits,
    ``%``, ``|``, ``_`` and ``-``.
    """
    if not topic:
        return "topic name is empty"
    if len(topic) > TOPIC_MAX_LENGTH:
        return f"topic name has {len(topic)} characters, more than the limit {TOPIC_MAX_LENGTH}"
    if _VALID_TOPIC.fullmatch(topic) is None:
        bad = sorted({c for c in topic if _VALID_TOPIC.fullmatch(c) is None})
        return f"topic name {topic!r} has characters outside [%|a-zA-Z0-9_-]: {''.join(bad)!r}"
    return None


def is_system_topic(topic: str) -> bool:
    """True for RocketMQ's reserved topics, which users may not send to directly."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a group's failed messages wait for redelivery."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``%DLQ%<group>``: where a group's messages go after the last retry."""
    return DLQ_GROUP_TOPIC_PREFIX + group
