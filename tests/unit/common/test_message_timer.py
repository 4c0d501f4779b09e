"""Message.deliver_time_ms / delay_ms write RocketMQ 5's timer properties."""

from __future__ import annotations

import pytest

from orbitmq.common import Message
from orbitmq.common import message_const as mc


def test_setters_write_and_clear_the_rocketmq_properties() -> None:
    msg = Message("T", b"x")
    assert msg.deliver_time_ms is None and msg.delay_ms is None
    msg.deliver_time_ms = 1_700_000_000_000
    msg.delay_ms = 1500
    assert msg.properties[mc.PROPERTY_TIMER_DELIVER_MS] == "1700000000000"
    assert msg.properties[mc.PROPERTY_TIMER_DELAY_MS] == "1500"
    assert (msg.deliver_time_ms, msg.delay_ms) == (1_700_000_000_000, 1500)
    msg.deliver_time_ms = None
    msg.delay_ms = None
    assert mc.PROPERTY_TIMER_DELIVER_MS not in msg.properties
    assert mc.PROPERTY_TIMER_DELAY_MS not in msg.properties


def test_negative_values_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="delay_ms: -1 is negative"):
        Message("T").delay_ms = -1
    with pytest.raises(ValueError, match="deliver_time_ms: -5 is negative"):
        Message("T").deliver_time_ms = -5
