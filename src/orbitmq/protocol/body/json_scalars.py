"""Reading JSON scalars into a body's fields as fastjson reads them into Java's.

fastjson converts where the meaning is plain: a number in a string (the C++ client sends
``"subVersion":"1795259195633"``), ``"true"`` / ``1`` for a boolean, an integer where a string
is expected. Everything else is a :class:`BodyError` saying what was expected and what came.
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any, Final

from orbitmq.protocol.body.errors import BodyError

_INTEGER: Final = re.compile(r"\s*[+-]?[0-9]+\s*")
#: Java's long: what every integer member of a RocketMQ body is at most.
LONG_MIN: Final = -(2**63)
LONG_MAX: Final = 2**63 - 1


def kind(value: object) -> str:
    """How an error message names a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value[:40]!r}"
    return "a list" if isinstance(value, list) else "an object"


def fail(expected: str, value: object) -> BodyError:
    return BodyError(f"expected {expected}, got {kind(value)}")


def same(value: Any) -> Any:
    return value


def decode_int(value: Any) -> int:
    if type(value) is int:
        number = value
    elif (isinstance(value, str) and _INTEGER.fullmatch(value)) or (
        isinstance(value, float) and value.is_integer()
    ):
        number = int(value)
    else:
        raise fail("an integer", value)
    if not LONG_MIN <= number <= LONG_MAX:
        raise fail("an integer that fits in 64 bits", value)
    return number


def decode_float(value: Any) -> float:
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            number = float(value)
    if number is None or not math.isfinite(number):
        raise fail("a finite number", value)
    return number


def decode_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if type(value) is int and value in (0, 1):
        return value == 1
    raise fail("a boolean", value)


def decode_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if type(value) is int:
        return str(value)
    raise fail("a string", value)
