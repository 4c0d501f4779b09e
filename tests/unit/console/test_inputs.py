"""The console's form and query fields: each bad value is a ConsoleInputError naming the
field and the value, never a stack trace."""

from __future__ import annotations

from datetime import datetime

import pytest

from orbitmq.console import ConsoleInputError
from orbitmq.console.inputs import format_ms, integer, time_range, timestamp_ms, topic_name


def test_integer_takes_the_default_when_empty_and_names_the_field_when_bad() -> None:
    assert integer({}, "limit", 64, 1, 100) == 64
    assert integer({"limit": " 7 "}, "limit", 64, 1, 100) == 7
    with pytest.raises(ConsoleInputError, match=r"limit: 'x' is not a whole number"):
        integer({"limit": "x"}, "limit", 64, 1, 100)
    with pytest.raises(ConsoleInputError, match=r"limit: 101 is not between 1 and 100"):
        integer({"limit": "101"}, "limit", 64, 1, 100)


def test_times_are_epoch_milliseconds_or_iso_8601() -> None:
    assert timestamp_ms({"t": "1700000000000"}, "t") == 1_700_000_000_000
    local = int(datetime(2026, 12, 7, 9, 30).timestamp() * 1000)
    assert timestamp_ms({"t": "2026-12-07T09:30"}, "t") == local
    with pytest.raises(ConsoleInputError, match=r"t: 'noon' is not a time"):
        timestamp_ms({"t": "noon"}, "t")
    with pytest.raises(ConsoleInputError, match=r"t: required"):
        timestamp_ms({}, "t")


def test_a_time_range_defaults_to_the_last_span_and_refuses_begin_after_end() -> None:
    begin, end = time_range({"end": "5000"}, 1000)
    assert (begin, end) == (4000, 5000)
    with pytest.raises(ConsoleInputError, match=r"begin: '9000' is after end 5000"):
        time_range({"begin": "9000", "end": "5000"}, 1000)


def test_topic_names_are_checked_as_rocketmq_checks_them() -> None:
    assert topic_name({"topic": " Orders "}) == "Orders"
    with pytest.raises(ConsoleInputError, match=r"^topic: "):
        topic_name({"topic": "bad topic"})
    with pytest.raises(ConsoleInputError, match=r"topic: required"):
        topic_name({"topic": ""})


def test_format_ms_shows_a_dash_for_no_time() -> None:
    assert format_ms(0) == "-"
    assert format_ms(1_700_000_000_123).endswith(".123")
