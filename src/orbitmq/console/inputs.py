"""What a page's query string and form fields are turned into: names, numbers and times, each
checked, so that bad input becomes a message that names the field (``ConsoleInputError``)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from orbitmq.common import OrbitError
from orbitmq.common.topic import topic_problem

#: The forms a time field takes (an HTML datetime-local field sends the ISO one).
TIME_FORMS: Final = "epoch milliseconds or ISO 8601 (2026-12-07T09:30)"


class ConsoleInputError(OrbitError):
    """A field of a request that is missing or malformed; its text is shown on the page."""


def required(fields: Mapping[str, str], name: str) -> str:
    value = fields.get(name, "").strip()
    if not value:
        raise ConsoleInputError(f"{name}: required")
    return value


def topic_name(fields: Mapping[str, str], name: str = "topic") -> str:
    value = required(fields, name)
    problem = topic_problem(value)
    if problem is not None:
        raise ConsoleInputError(f"{name}: {problem}")
    return value


def integer(fields: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = fields.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConsoleInputError(f"{name}: {text!r} is not a whole number") from None
    if not low <= value <= high:
        raise ConsoleInputError(f"{name}: {value} is not between {low} and {high}")
    return value


def timestamp_ms(fields: Mapping[str, str], name: str, default: int | None = None) -> int:
    text = fields.get(name, "").strip()
    if not text:
        if default is None:
            raise ConsoleInputError(f"{name}: required ({TIME_FORMS})")
        return default
    if text.isdigit():
        return int(text)
    try:
        return int(datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise ConsoleInputError(f"{name}: {text!r} is not a time ({TIME_FORMS})") from None


def time_range(fields: Mapping[str, str], span_ms: int) -> tuple[int, int]:
    """``begin`` and ``end`` (default: the last ``span_ms`` up to now); begin before end."""
    now = time.time_ns() // 1_000_000
    end = timestamp_ms(fields, "end", now)
    begin = timestamp_ms(fields, "begin", end - span_ms)
    if begin > end:
        raise ConsoleInputError(f"begin: {fields.get('begin')!r} is after end {end}")
    return begin, end


def format_ms(value: int) -> str:
    """A store or consume time for a page (local time, milliseconds); '-' for none."""
    if value <= 0:
        return "-"
    moment = datetime.fromtimestamp(value / 1000)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{value % 1000:03d}"
