"""Times on the command line, as mqadmin takes them: ``now``, epoch milliseconds, or
``yyyy-MM-dd#HH:mm:ss:SSS`` (local time, RocketMQ's ``UtilAll.YYYY_MM_DD_HH_MM_SS_SSS``);
ISO 8601 (``2026-12-07T10:00:00``, local time unless it names a zone) is taken too."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Final

#: mqadmin's form, written for ``datetime.strptime``.
_MQADMIN_FORMAT: Final = "%Y-%m-%d#%H:%M:%S:%f"
FORMS: Final = "now, epoch milliseconds, yyyy-MM-dd#HH:mm:ss:SSS or ISO 8601"


class TimestampError(ValueError):
    """A time the command line cannot read; the message names the value and the forms."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def parse_timestamp_ms(text: str, what: str = "timestamp") -> int:
    """Epoch milliseconds of ``text``; ``what`` names the option in the error."""
    value = text.strip()
    if value == "now":
        return now_ms()
    if value.isdigit():
        return int(value)
    for parse in (_mqadmin_form, datetime.fromisoformat):
        try:
            return int(parse(value).timestamp() * 1000)
        except ValueError:
            continue
    raise TimestampError(f"{what}: {text!r} is not a time ({FORMS})")


def _mqadmin_form(value: str) -> datetime:
    return datetime.strptime(value, _MQADMIN_FORMAT)


def format_timestamp_ms(timestamp_ms: int) -> str:
    """Local time with milliseconds, as mqadmin prints store and born times; "" for 0."""
    if timestamp_ms <= 0:
        return ""
    moment = datetime.fromtimestamp(timestamp_ms / 1000)
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{timestamp_ms % 1000:03d}"
