"""Java's value rules as RocketMQ's SQL92 filter applies them: the five value classes an
expression can see (Integer, Long, Double, Boolean, String), how a String becomes one of
the others (``Integer.valueOf``, ``Long.valueOf``, ``Double.valueOf``, ``Boolean.valueOf``),
and ``ComparisonExpression.__compare``'s way of comparing two values of different classes.

Message properties are always Strings; a literal fixes the class of the other side, so the
comparison to use is chosen once, when an expression is compiled (``comparator``), never
per message. Pure functions: safe from any thread.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Callable
from typing import Final


class JavaType(enum.Enum):
    """The runtime class of a value in RocketMQ's evaluator. NULL: always null."""

    INTEGER = "Integer"
    LONG = "Long"
    DOUBLE = "Double"
    BOOLEAN = "Boolean"
    STRING = "String"
    NULL = "null"


NUMERIC: Final = frozenset({JavaType.INTEGER, JavaType.LONG, JavaType.DOUBLE})

INT_MIN: Final = -(1 << 31)
INT_MAX: Final = (1 << 31) - 1
LONG_MIN: Final = -(1 << 63)
LONG_MAX: Final = (1 << 63) - 1


class Sql92EvaluationError(ValueError):
    """A message made the expression fail (a String that is not a number where one is
    needed): RocketMQ catches it and does not deliver the message."""


#: Java's ``Integer.parseInt`` / ``Long.parseLong`` accept a sign and decimal digits only.
_JAVA_INTEGER: Final = re.compile(r"[+-]?[0-9]+")
#: ``Double.valueOf``: decimal or NaN / Infinity, an optional f/F/d/D suffix (hexadecimal
#: floats are not accepted here).
_JAVA_DOUBLE: Final = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?"
)


def _java_integral(text: str, low: int, high: int, kind: str) -> int:
    if _JAVA_INTEGER.fullmatch(text) is None:
        raise Sql92EvaluationError(f"For input string: {text!r} ({kind})")
    value = int(text)
    if not low <= value <= high:
        raise Sql92EvaluationError(f"For input string: {text!r} ({kind} out of range)")
    return value


def java_integer(text: str) -> int:
    """``Integer.valueOf(text)``; raises Sql92EvaluationError as Java raises
    NumberFormatException."""
    return _java_integral(text, INT_MIN, INT_MAX, "Integer")


def java_long(text: str) -> int:
    """``Long.valueOf(text)``."""
    return _java_integral(text, LONG_MIN, LONG_MAX, "Long")


def java_double(text: str) -> float:
    """``Double.valueOf(text)``: leading and trailing characters up to space ignored."""
    trimmed = text.strip("".join(map(chr, range(33))))
    if _JAVA_DOUBLE.fullmatch(trimmed) is None:
        raise Sql92EvaluationError(f"For input string: {text!r} (Double)")
    if trimmed[-1] in "fFdD" and not trimmed.endswith(("NaN", "Infinity")):
        trimmed = trimmed[:-1]
    return float(trimmed)


def java_boolean(text: str) -> bool:
    """``Boolean.valueOf(text)``: "true" in any case, anything else false."""
    return text.lower() == "true"


def natural(left: object, right: object) -> int:
    """``compareTo`` of two values of the same class (Integer, Long, Boolean, String)."""
    if left < right:  # type: ignore[operator]
        return -1
    return 1 if left > right else 0  # type: ignore[operator]


def double_compare(left: float, right: float) -> int:
    """``Double.compare``: -0.0 below 0.0, NaN equal to itself and above everything."""
    if left < right:
        return -1
    if left > right:
        return 1
    if left == right:
        if left == 0.0:
            return natural(math.copysign(1.0, left), math.copysign(1.0, right))
        return 0
    if math.isnan(left):
        return 0 if math.isnan(right) else 1
    return -1


Comparator = Callable[[object, object], int]


def _minus_one(left: object, right: object) -> int:
    # __compare's answer for two classes it cannot bring together.
    del left, right
    return -1


def _class_cast(left: object, right: object) -> int:
    # Boolean against String: RocketMQ casts the Boolean to String, which throws.
    raise Sql92EvaluationError(f"{left!r} (Boolean) cannot be compared with {right!r} (String)")


def _both_double(left: object, right: object) -> int:
    return double_compare(float(left), float(right))  # type: ignore[arg-type]


_PARSERS: Final[dict[JavaType, Callable[[str], object]]] = {
    JavaType.INTEGER: java_integer,
    JavaType.LONG: java_long,
    JavaType.DOUBLE: java_double,
    JavaType.BOOLEAN: java_boolean,
}


def _same(kind: JavaType) -> Comparator:
    return _both_double if kind is JavaType.DOUBLE else natural


def _parse_right(kind: JavaType) -> Comparator:
    parse, compare = _PARSERS[kind], _same(kind)

    def compare_parsed_right(left: object, right: object) -> int:
        return compare(left, parse(right))  # type: ignore[arg-type]

    return compare_parsed_right


def _parse_left(kind: JavaType) -> Comparator:
    parse, compare = _PARSERS[kind], _same(kind)

    def compare_parsed_left(left: object, right: object) -> int:
        return compare(parse(left), right)  # type: ignore[arg-type]

    return compare_parsed_left


def comparator(left: JavaType, right: JavaType) -> Comparator:
    """``__compare(lv, rv, convertStringExpressions=true)`` for values of these classes
    (neither null): numbers widen (Integer < Long < Double), a String beside a number or a
    Boolean is parsed as that class, other pairs compare as -1."""
    if left is right:
        return _same(left)
    if left is JavaType.BOOLEAN:
        return _class_cast if right is JavaType.STRING else _minus_one
    if left in NUMERIC:
        if right in NUMERIC:
            if JavaType.DOUBLE in (left, right):
                return _both_double
            return natural
        if right is JavaType.STRING:
            return _parse_right(left)
        return _minus_one
    if left is JavaType.STRING and right in _PARSERS:
        return _parse_left(right)
    return _minus_one


def type_of_constant(value: object) -> JavaType:
    """The class of a literal's value (ints are Integer unless beyond Integer's range)."""
    if value is None:
        return JavaType.NULL
    if isinstance(value, bool):
        return JavaType.BOOLEAN
    if isinstance(value, int):
        return JavaType.INTEGER if INT_MIN <= value <= INT_MAX else JavaType.LONG
    if isinstance(value, float):
        return JavaType.DOUBLE
    return JavaType.STRING
