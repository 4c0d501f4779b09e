"""Topic names: RocketMQ's system topics, group topic prefixes and name validation."""

from __future__ import annotations

import functools
import re
from enum import Enum
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
#: Where timer messages wait for their time (RocketMQ 5's ``TimerMessageStore.TIMER_TOPIC``,
#: one queue). A system topic by its prefix.
RMQ_SYS_WHEEL_TIMER_TOPIC: Final = SYSTEM_TOPIC_PREFIX + "wheel_timer"
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

#: The system topics no client may send to: the broker alone writes them (delayed messages,
#: transaction halves and their op records, offset corrections). RocketMQ 4.9.8's
#: ``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET``, the same in 5.x. The other system topics
#: take sends, as in RocketMQ: TBW102 and BenchmarkTest are ordinary topics to a send
#: (RocketMQ's benchmark tool sends to the latter), clients' message traces go to
#: RMQ_SYS_TRACE_TOPIC, and a send to %RETRY%<group> follows the broker's retry rules (the
#: group must exist; past its max reconsume times the message goes to %DLQ%<group>).
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        RMQ_SYS_SCHEDULE_TOPIC,
        RMQ_SYS_TRANS_HALF_TOPIC,
        RMQ_SYS_TRANS_OP_HALF_TOPIC,
        RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
        RMQ_SYS_SELF_TEST_TOPIC,
        RMQ_SYS_OFFSET_MOVED_EVENT,
    }
)
#: RocketMQ's remark (and its client's message) for a send to one of those, byte for byte.
SEND_FORBIDDEN_REMARK: Final = "Sending message to topic[{topic}] is forbidden."

#: RocketMQ's limit: the stored record keeps the topic length in one signed byte.
TOPIC_MAX_LENGTH: Final = 127
_VALID_TOPIC: Final = re.compile(r"[%|a-zA-Z0-9_-]+")


class TopicProblem(Enum):
    """Why a topic name is refused, by RocketMQ's ``TopicValidator`` rules. The value is the
    broker's remark, byte for byte as RocketMQ 4.9.8 answers it."""

    BLANK = "The specified topic is blank."
    ILLEGAL_CHARACTERS = (
        "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    )
    TOO_LONG = "The specified topic is longer than topic max length."

    @property
    def remark(self) -> str:
        return str(self.value)


@functools.lru_cache(maxsize=4096)
def validate_topic(topic: str) -> TopicProblem | None:
    """The one topic-name check (``TopicValidator.validateTopic``, its rules in its order):
    not blank, only letters, digits, ``%``, ``|``, ``_`` and ``-``, at most 127 characters.

    Cached: every send asks, about the same few names. Thread-safe.
    """
    if not topic.strip():
        return TopicProblem.BLANK
    if _VALID_TOPIC.fullmatch(topic) is None:
        return TopicProblem.ILLEGAL_CHARACTERS
    if len(topic) > TOPIC_MAX_LENGTH:
        return TopicProblem.TOO_LONG
    return None


def topic_problem(topic: str) -> str | None:
    """Why ``topic`` is not a valid topic name, for a user: ``validate_topic``'s answer told
    with the name, the bad characters or the length and the limit. None when it is valid."""
    problem = validate_topic(topic)
    if problem is TopicProblem.BLANK:
        return "topic name is empty" if not topic else f"topic name {topic!r} is blank"
    if problem is TopicProblem.ILLEGAL_CHARACTERS:
        bad = sorted({c for c in topic if _VALID_TOPIC.fullmatch(c) is None})
        return f"topic name {topic!r} has characters outside [%|a-zA-Z0-9_-]: {''.join(bad)!r}"
    if problem is TopicProblem.TOO_LONG:
        return f"topic name has {len(topic)} characters, more than the limit {TOPIC_MAX_LENGTH}"
    return None


def is_system_topic(topic: str) -> bool:
    """True for RocketMQ's reserved topics (``TopicValidator.isSystemTopic``), which an admin
    may not create or delete; a broker adds its own (cluster name, broker name, reply
    topic). Sends are refused for the narrower ``NOT_ALLOWED_SEND_TOPICS`` only."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def send_forbidden_remark(topic: str) -> str | None:
    """RocketMQ's refusal of a send to ``topic`` (``TopicValidator.isNotAllowedSendTopic``),
    or None when sends to it are allowed."""
    if topic in NOT_ALLOWED_SEND_TOPICS:
        return SEND_FORBIDDEN_REMARK.format(topic=topic)
    return None


def retry_topic(group: str) -> str:
    """``%RETRY%<group>``: where a group's failed messages wait for redelivery."""
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    """``%DLQ%<group>``: where a group's messages go after the last retry."""
    return DLQ_GROUP_TOPIC_PREFIX + group
