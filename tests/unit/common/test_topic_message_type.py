"""A message's type and the send check against its topic's type (RocketMQ 5's rules)."""

from __future__ import annotations

import pytest

from orbitmq.common import message_const as mc
from orbitmq.common.topic_message_type import (
    TopicMessageType,
    message_type_of,
    message_type_problem,
    send_type_problem,
)

T = TopicMessageType


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({mc.PROPERTY_TAGS: "a"}, T.NORMAL),
        ({mc.PROPERTY_TRANSACTION_PREPARED: "true"}, T.TRANSACTION),
        # Exactly "true", as parseFromMessageProperty compares.
        ({mc.PROPERTY_TRANSACTION_PREPARED: "TRUE"}, T.NORMAL),
        ({mc.PROPERTY_TRANSACTION_PREPARED: "false"}, T.NORMAL),
        ({mc.PROPERTY_SHARDING_KEY: "g"}, T.FIFO),
        ({mc.PROPERTY_DELAY_TIME_LEVEL: "3"}, T.DELAY),
        ({mc.PROPERTY_TIMER_DELIVER_MS: "1"}, T.DELAY),
        ({mc.PROPERTY_TIMER_DELAY_SEC: "1"}, T.DELAY),
        ({mc.PROPERTY_TIMER_DELAY_MS: "1"}, T.DELAY),
        # A delay wins over a message group in the send check.
        ({mc.PROPERTY_SHARDING_KEY: "g", mc.PROPERTY_DELAY_TIME_LEVEL: "3"}, T.DELAY),
        ({mc.PROPERTY_TRANSACTION_PREPARED: "true", mc.PROPERTY_SHARDING_KEY: "g"}, T.TRANSACTION),
        # The 4.x commercial property is not a delay to the send check.
        ({"__STARTDELIVERTIME": "1"}, T.NORMAL),
    ],
)
def test_message_type_of(properties: dict[str, str], expected: TopicMessageType) -> None:
    assert message_type_of(properties) is expected


def test_the_type_must_match_unless_the_topic_is_mixed() -> None:
    assert message_type_problem(T.FIFO, T.FIFO) is None
    assert message_type_problem(T.MIXED, T.DELAY) is None
    assert message_type_problem(T.FIFO, T.NORMAL) == (
        "TopicMessageType validate failed, the expected type is FIFO, but actual type is NORMAL"
    )
    # A missing topic is UNSPECIFIED: nothing passes.
    assert message_type_problem(T.UNSPECIFIED, T.NORMAL) is not None
    assert message_type_problem(T.MIXED, T.UNSPECIFIED) is not None


def test_retry_dlq_and_transferred_messages_are_not_checked() -> None:
    delayed = {mc.PROPERTY_DELAY_TIME_LEVEL: "3"}
    assert send_type_problem("Orders", T.NORMAL, delayed) is not None
    assert send_type_problem("%RETRY%g", T.NORMAL, delayed) is None
    assert send_type_problem("%DLQ%g", T.NORMAL, delayed) is None
    assert (
        send_type_problem("Orders", T.NORMAL, {**delayed, mc.PROPERTY_TRANSFER_FLAG: "1"}) is None
    )


def test_metrics_values_are_lower_case() -> None:
    assert [t.metrics_value for t in T] == [
        "unspecified", "normal", "fifo", "delay", "transaction", "mixed"
    ]  # fmt: skip
