"""Topic names: validation as RocketMQ's TopicValidator, retry / DLQ names, system topics."""

from __future__ import annotations

import pytest

from orbitmq.common import topic_problem
from orbitmq.common.topic import (
    NOT_ALLOWED_SEND_TOPICS,
    SYSTEM_TOPICS,
    dlq_topic,
    is_system_topic,
    retry_topic,
    send_forbidden_remark,
    validate_topic,
)


@pytest.mark.parametrize(
    "topic",
    ["TopicTest", "a", "%RETRY%group", "%DLQ%group", "A|B", "a-b_c", "0123", "t" * 127],
)
def test_valid_topic_names(topic: str) -> None:
    assert topic_problem(topic) is None


def test_empty_topic() -> None:
    problem = topic_problem("")
    assert problem is not None
    assert "empty" in problem


def test_length_limit_is_127() -> None:
    assert topic_problem("x" * 127) is None
    problem = topic_problem("x" * 128)
    assert problem is not None
    assert "128" in problem
    assert "127" in problem


@pytest.mark.parametrize(
    ("topic", "bad"),
    [
        ("my topic", " "),
        ("a.b", "."),
        ("a/b", "/"),
        ("tópico", "ó"),
        ("主题", "主"),
        ("a\nb", "\n"),
        ("t#1", "#"),
        ("٣", "٣"),  # a non-ASCII digit
    ],
)
def test_bad_characters_are_named(topic: str, bad: str) -> None:
    problem = topic_problem(topic)
    assert problem is not None
    assert repr(topic) in problem
    assert bad in problem or repr(bad)[1:-1] in problem


def test_retry_and_dlq_topics() -> None:
    assert retry_topic("GID_order") == "%RETRY%GID_order"
    assert dlq_topic("GID_order") == "%DLQ%GID_order"
    assert topic_problem(retry_topic("GID_order")) is None
    assert topic_problem(dlq_topic("GID_order")) is None


@pytest.mark.parametrize(
    "topic",
    [
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
        "rmq_sys_anything",
    ],
)
def test_system_topics(topic: str) -> None:
    assert is_system_topic(topic)


@pytest.mark.parametrize(
    "topic", ["TopicTest", "%RETRY%group", "%DLQ%group", "RMQ_SYS_", "tbw102", "xrmq_sys_"]
)
def test_user_topics_are_not_system_topics(topic: str) -> None:
    assert not is_system_topic(topic)


# RocketMQ 4.9.8's TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET, exactly.
FORBIDDEN = [
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "RMQ_SYS_TRANS_OP_HALF_TOPIC",
    "TRANS_CHECK_MAX_TIME_TOPIC",
    "SELF_TEST_TOPIC",
    "OFFSET_MOVED_EVENT",
]


@pytest.mark.parametrize("topic", FORBIDDEN)
def test_sends_to_the_broker_written_system_topics_are_forbidden(topic: str) -> None:
    assert send_forbidden_remark(topic) == f"Sending message to topic[{topic}] is forbidden."


def test_the_forbidden_topics_are_exactly_rocketmqs_and_all_system_topics() -> None:
    assert sorted(NOT_ALLOWED_SEND_TOPICS) == sorted(FORBIDDEN)
    assert NOT_ALLOWED_SEND_TOPICS < SYSTEM_TOPICS


@pytest.mark.parametrize(
    "topic",
    ["TBW102", "BenchmarkTest", "RMQ_SYS_TRACE_TOPIC", "rmq_sys_x", "%RETRY%g", "%DLQ%g", "T"],
)
def test_other_topics_take_sends_as_in_rocketmq(topic: str) -> None:
    assert send_forbidden_remark(topic) is None


@pytest.mark.parametrize(
    ("topic", "remark"),
    [
        ("", "The specified topic is blank."),
        ("  ", "The specified topic is blank."),
        (
            "a b",
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
        ),
        ("t" * 128, "The specified topic is longer than topic max length."),
        # TopicValidator checks the characters before the length.
        (
            "#" * 128,
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
        ),
    ],
)
def test_validate_topic_answers_rocketmqs_remarks(topic: str, remark: str) -> None:
    problem = validate_topic(topic)
    assert problem is not None
    assert problem.remark == remark
    assert topic_problem(topic) is not None


def test_validate_topic_accepts_what_topic_problem_accepts() -> None:
    for topic in ["TopicTest", "%RETRY%g", "A|B", "t" * 127]:
        assert validate_topic(topic) is None
        assert topic_problem(topic) is None
