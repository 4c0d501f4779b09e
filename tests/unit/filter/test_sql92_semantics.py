"""What an SQL92 filter answers for a message's properties, as RocketMQ 4.9.8 / 5's
evaluator answers (``ComparisonExpression``, ``LogicExpression``, ``UnaryExpression``,
``ExpressionMessageFilter``): every operator, nulls, Strings converted for numbers,
failures that drop the message, precedence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.filter import Sql92EvaluationError, parse_sql92
from orbitmq.filter.java_values import java_double, java_integer, java_long

T, F, U = True, False, None

#: (expression, properties, evaluate's answer): True, False or None (unknown).
CASES: list[tuple[str, dict[str, str], bool | None]] = [
    # comparisons: a property's String becomes the literal's class
    ("a > 5", {"a": "10"}, T),
    ("a > 5", {"a": "5"}, F),
    ("a >= 5", {"a": "5"}, T),
    ("a < 5", {"a": "-3"}, T),
    ("a <= 5", {"a": "6"}, F),
    ("a = 5", {"a": "5"}, T),
    ("a = 5", {"a": "+5"}, T),
    ("a <> 5", {"a": "6"}, T),
    ("a <> 5", {"a": "5"}, F),
    ("a > 1.5", {"a": "2"}, T),
    ("a > 1.5", {"a": " 1.75 "}, T),
    ("a = 2.0", {"a": "2"}, T),
    ("a > 5", {"a": "10000000000"}, None),  # Integer.valueOf fails: the message is dropped
    ("a > 5000000000", {"a": "10000000000"}, T),  # a Long literal: Long.valueOf
    ("a > -5", {"a": "-4"}, T),
    ("a > - -5", {"a": "6"}, T),
    ("a = 'x'", {"a": "x"}, T),
    ("a = 'x'", {"a": "X"}, F),
    ("a <> 'x'", {"a": "y"}, T),
    ("a = 'it''s'", {"a": "it's"}, T),
    ("a = TRUE", {"a": "true"}, T),
    ("a = TRUE", {"a": "TRUE"}, T),
    ("a = TRUE", {"a": "yes"}, F),
    ("a = FALSE", {"a": "no"}, T),  # Boolean.valueOf: anything but "true" is false
    ("5 < a", {"a": "6"}, T),
    ("5 = a", {"a": "5"}, T),
    ("a = b", {"a": "1", "b": "1"}, T),
    ("a = b", {"a": "1", "b": "01"}, F),  # two Strings: equals, no numbers
    ("a < b", {"a": "2", "b": "10"}, T),  # two Strings ordered as doubles
    ("1 = 1.0", {}, T),
    ("2 > 1", {}, T),
    ("5000000000 > 1", {}, T),
    # nulls: a missing property makes a comparison unknown ...
    ("b = 'x'", {}, U),
    ("b > 1", {}, U),
    ("b <> 'x'", {}, U),
    ("NOT (b = 'x')", {}, U),
    ("'x' = b", {}, F),  # ... except = with only the right side null: FALSE
    ("b IS NULL", {}, T),
    ("b IS NULL", {"b": ""}, F),
    ("b IS NOT NULL", {"b": "v"}, T),
    ("b IS NOT NULL", {}, F),
    # three-valued logic
    ("b = 1 OR a = 1", {"a": "1"}, T),
    ("b = 1 OR a = 1", {"a": "2"}, U),
    ("b = 1 AND a = 1", {"a": "2"}, F),
    ("b = 1 AND a = 1", {"a": "1"}, U),
    ("a = 1 AND a = 1", {"a": "1"}, T),
    ("a = 2 OR a = 3", {"a": "1"}, F),
    ("NOT a = 1", {"a": "1"}, F),  # (NOT a) = 1: a Boolean never equals an Integer
    ("NOT (a = 1)", {"a": "2"}, T),
    ("TRUE", {}, T),
    ("FALSE OR TRUE", {}, T),
    ("NULL", {}, U),
    ("a", {"a": "true"}, F),  # a property as a condition: a String is never TRUE
    ("a", {}, U),
    ("NOT a", {"a": "x"}, T),
    # BETWEEN
    ("a BETWEEN 1 AND 3", {"a": "1"}, T),
    ("a BETWEEN 1 AND 3", {"a": "3"}, T),
    ("a BETWEEN 1 AND 3", {"a": "4"}, F),
    ("a BETWEEN 1 AND 3", {}, U),
    ("a NOT BETWEEN 1 AND 3", {"a": "4"}, T),
    ("a NOT BETWEEN 1 AND 3", {"a": "2"}, F),
    ("a between -1.5 and 1.5", {"a": "0"}, T),
    # IN
    ("a IN ('x', 'y')", {"a": "y"}, T),
    ("a IN ('x', 'y')", {"a": "z"}, F),
    ("a IN ('x')", {}, U),
    ("a NOT IN ('x', 'y')", {"a": "z"}, T),
    ("a NOT IN ('x', 'y')", {"a": "x"}, F),
    ("a NOT IN ('x')", {}, U),
    ("TAGS IN ('TagA', 'TagB')", {"TAGS": "TagB"}, T),
    # RocketMQ 5's string tests: FALSE, never unknown, for a missing property
    ("a CONTAINS 'bc'", {"a": "abcd"}, T),
    ("a CONTAINS 'bc'", {}, F),
    ("a NOT CONTAINS 'bc'", {"a": "abd"}, T),
    ("a NOT CONTAINS 'bc'", {}, F),
    ("a STARTSWITH 'ab'", {"a": "abc"}, T),
    ("a NOT STARTSWITH 'ab'", {"a": "abc"}, F),
    ("a ENDSWITH 'bc'", {"a": "abc"}, T),
    ("a NOT ENDSWITH 'bc'", {"a": "abd"}, T),
    ("a CONTAINS ''", {"a": "abc"}, F),
    # case: keywords in any case, property names exactly
    ("a > 5 and b = 'x'", {"a": "6", "b": "x"}, T),
    ("A > 5", {"a": "6"}, U),
    ("a Is Not Null", {"a": "1"}, T),
    # precedence: AND before OR; comparisons before AND
    ("a = 1 OR a = 2 AND b = 3", {"a": "1", "b": "0"}, T),
    ("(a = 1 OR a = 2) AND b = 3", {"a": "1", "b": "0"}, F),
    # comments and whitespace
    ("a /* why */ = 1 -- why not\n", {"a": "1"}, T),
]


@pytest.mark.parametrize(("text", "properties", "expected"), CASES)
def test_evaluation(text: str, properties: dict[str, str], expected: bool | None) -> None:
    expression = parse_sql92(text)
    try:
        answer = expression.evaluate(properties)
    except Sql92EvaluationError:
        answer = None
    assert answer is expected
    assert expression.matches(properties) is (expected is True)


@pytest.mark.parametrize(
    ("text", "properties"),
    [
        ("a > 5", {"a": "abc"}),
        ("a = 5", {"a": "5.0"}),  # Integer.valueOf refuses a decimal point
        ("a > 1.5", {"a": "1,5"}),
        ("a < b", {"a": "x", "b": "1"}),
        ("TRUE = (a IS NULL) OR a = 1", {"a": "x"}),  # a failure anywhere drops the message
        ("a = 1 OR b = 'x'", {"a": "one", "b": "x"}),
    ],
)
def test_a_string_that_is_not_the_number_needed_drops_the_message(
    text: str, properties: dict[str, str]
) -> None:
    expression = parse_sql92(text)
    with pytest.raises(Sql92EvaluationError):
        expression.evaluate(properties)
    assert not expression.matches(properties)


def test_the_right_side_is_not_evaluated_when_the_left_decides() -> None:
    # Java's AND / OR return before evaluating a right side that would throw.
    assert parse_sql92("b = 'x' OR a = 1").matches({"b": "x", "a": "one"})
    assert not parse_sql92("b = 'y' AND a = 1").matches({"b": "x", "a": "one"})


@pytest.mark.parametrize(
    ("text", "ok", "value"),
    [
        ("12", True, 12),
        ("-12", True, -12),
        ("+12", True, 12),
        ("2147483647", True, 2147483647),
        ("2147483648", False, None),
        ("1_000", False, None),
        (" 1", False, None),
        ("1.0", False, None),
        ("", False, None),
    ],
)
def test_java_integer(text: str, ok: bool, value: int | None) -> None:
    if ok:
        assert java_integer(text) == value
    else:
        with pytest.raises(Sql92EvaluationError):
            java_integer(text)


def test_java_long_and_double() -> None:
    assert java_long("9223372036854775807") == 2**63 - 1
    with pytest.raises(Sql92EvaluationError):
        java_long("9223372036854775808")
    assert java_double(" 1.5 ") == 1.5
    assert java_double("1e3") == 1000.0
    assert java_double("2.5f") == 2.5
    assert java_double("-Infinity") == float("-inf")
    for bad in ("inf", "1_0", "0x10", "abc", ""):
        with pytest.raises(Sql92EvaluationError):
            java_double(bad)


@given(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**31), 2**31 - 1))
def test_integer_comparisons_agree_with_python(value: int, literal: int) -> None:
    properties = {"a": str(value)}
    for operator, expected in (
        (">", value > literal),
        (">=", value >= literal),
        ("<", value < literal),
        ("<=", value <= literal),
        ("=", value == literal),
        ("<>", value != literal),
    ):
        assert parse_sql92(f"a {operator} {literal}").matches(properties) is expected
