"""Times on the command line: mqadmin's forms, ISO 8601, and a bad one named in the error."""

from __future__ import annotations

from datetime import datetime

import pytest

from orbitmq.cli.timestamps import (
    TimestampError,
    format_timestamp_ms,
    now_ms,
    parse_timestamp_ms,
)


def local_ms(
    year: int, month: int, day: int, hour: int, minute: int, second: int, micros: int = 0
) -> int:
    return int(datetime(year, month, day, hour, minute, second, micros).timestamp() * 1000)


def test_mqadmin_forms() -> None:
    assert parse_timestamp_ms("1796632541105") == 1796632541105
    assert parse_timestamp_ms("2026-12-07#08:35:41:105") == local_ms(2026, 12, 7, 8, 35, 41, 105000)
    before = now_ms()
    assert before <= parse_timestamp_ms("now") <= now_ms()


def test_iso_8601_local_or_with_a_zone() -> None:
    assert parse_timestamp_ms("2026-12-07T08:35:41") == local_ms(2026, 12, 7, 8, 35, 41)
    assert parse_timestamp_ms("1970-01-01T00:00:01+00:00") == 1000


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01#00:00:00:000", "-5", ""])
def test_a_bad_time_names_the_option_and_the_forms(text: str) -> None:
    with pytest.raises(TimestampError) as caught:
        parse_timestamp_ms(text, "-s/--timestamp")
    assert str(caught.value) == (
        f"-s/--timestamp: {text!r} is not a time"
        " (now, epoch milliseconds, yyyy-MM-dd#HH:mm:ss:SSS or ISO 8601)"
    )


def test_format_round_trips_to_the_millisecond() -> None:
    stamp = local_ms(2026, 12, 7, 8, 35, 41, 7000)
    assert format_timestamp_ms(stamp) == "2026-12-07 08:35:41.007"
    assert format_timestamp_ms(0) == ""
