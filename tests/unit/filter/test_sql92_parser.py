"""The SQL92 grammar: what parses to which tree, what RocketMQ's parser refuses and where
the error points (line and column), and that a printed tree parses back to itself."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.filter import Sql92ParseError, SubscriptionParseError, parse_sql92

TREES = [
    ("a > 5", "(a > 5)"),
    ("a > 5 AND b = 'x'", "((a > 5) AND (b = 'x'))"),
    ("a = 1 OR b = 2 AND c = 3", "((a = 1) OR ((b = 2) AND (c = 3)))"),
    ("a = 1 AND b = 2 OR c = 3", "(((a = 1) AND (b = 2)) OR (c = 3))"),
    ("NOT a = 1", "((NOT a) = 1)"),
    ("NOT (a = 1)", "(NOT (a = 1))"),
    ("a <> 1", "(NOT (a = 1))"),
    ("a BETWEEN 1 AND 3", "((a >= 1) AND (a <= 3))"),
    ("a NOT BETWEEN 1 AND 3", "((a < 1) OR (a > 3))"),
    ("a BETWEEN 1 AND 3 AND b = 1", "(((a >= 1) AND (a <= 3)) AND (b = 1))"),
    ("a IN ('x')", "(a IN ('x'))"),
    ("a not in ('x', 'y''z')", "(a NOT IN ('x', 'y''z'))"),
    ("a IS NULL OR b IS NOT NULL", "((a IS NULL) OR (b IS NOT NULL))"),
    ("a contains 'x'", "(a CONTAINS 'x')"),
    ("a NOT STARTSWITH 'x'", "(a NOT STARTSWITH 'x')"),
    ("a endsWith 'x'", "(a ENDSWITH 'x')"),
    ("-a < +5", "((- a) < 5)"),
    ("a > 5L", "(a > 5)"),
    ("a > 5000000000", "(a > 5000000000L)"),
    ("a > 1.5e3", "(a > 1500.0)"),
    ("a > .5", "(a > 0.5)"),
    ("$x_1 = 1", "($x_1 = 1)"),
    ("andy = 1 AND notes = 2", "((andy = 1) AND (notes = 2))"),
    ("TRUE", "TRUE"),
    ("a", "a"),
    ("(((a)))", "a"),
    ("a = 1 /* x */ -- y\n", "(a = 1)"),
]


@pytest.mark.parametrize(("text", "tree"), TREES)
def test_tree(text: str, tree: str) -> None:
    assert str(parse_sql92(text)) == tree


#: (expression, the reason's beginning, line, column)
ERRORS = [
    ("a >", "unexpected end of expression", 1, 4),
    ("a > 5 AND", "unexpected end of expression", 1, 10),
    ("(a > 1", "unexpected end of expression", 1, 7),
    ("a > 1\n  AND AND b", "unexpected 'AND'", 2, 7),
    ("a ! 1", "unexpected character '!'", 1, 3),
    ('a = "x"', "unexpected character '\"'", 1, 5),
    ("a = 'x", 'unexpected character "\'"', 1, 5),
    ("and = 1", "unexpected 'and'", 1, 1),
    ("a IN ()", "unexpected ')'", 1, 7),
    ("a IN (1)", "unexpected '1'", 1, 7),  # IN takes strings only
    ("a CONTAINS 1", "unexpected '1'", 1, 12),
    ("a > 'x'", "Value ''x'' cannot be compared.", 1, 5),
    ("a >= TRUE", "Value 'TRUE' cannot be compared.", 1, 6),
    ("(a = 1) > 2", "Value '(a = 1)' cannot be compared.", 1, 2),
    ("a = NULL", "'NULL' cannot be compared.", 1, 5),
    ("NULL <> a", "'NULL' cannot be compared.", 1, 1),
    ("TRUE = 5", "'TRUE' cannot be compared with '5'", 1, 1),
    ("5", "Expression will not result in a boolean value: 5", 1, 1),
    ("'x' OR a", "Expression will not result in a boolean value: 'x'", 1, 1),
    ("-a", "Expression will not result in a boolean value: (- a)", 1, 1),
    ("a > 1 AND 5", "Expression will not result in a boolean value: 5", 1, 11),
    ("x = 1 AND\n  NOT 7", "Expression will not result in a boolean value: 7", 2, 7),
    ("5 IN ('a')", "Expected a property for In expression", 1, 1),
    ("a BETWEEN 3 AND 1", "Illegal values of between, left value(3)", 1, 11),
    ("a BETWEEN NULL AND 1", "Illegal values of between, values can not be null!", 1, 11),
    ("a > 9223372036854775808", 'For input string: "9223372036854775808"', 1, 5),
    ("a > 1e999", "1e999 is greater than", 1, 5),
    ("a > 0.0", "0.0 is less than 4.9E-324", 1, 5),
    ("", "unexpected end of expression", 1, 1),
]


@pytest.mark.parametrize(("text", "reason", "line", "column"), ERRORS)
def test_error_names_the_fault_and_its_position(
    text: str, reason: str, line: int, column: int
) -> None:
    with pytest.raises(Sql92ParseError) as caught:
        parse_sql92(text)
    error = caught.value
    assert error.reason.startswith(reason), error.reason
    assert (error.line, error.column) == (line, column)
    assert str(error).endswith(f"at line {line}, column {column}")
    assert isinstance(error, SubscriptionParseError)  # the broker answers 23 for it


def test_the_same_text_is_parsed_once() -> None:
    assert parse_sql92("k = 'cached'") is parse_sql92("k = 'cached'")


names = st.sampled_from(["a", "b", "TAGS", "x_1"])
literals = st.one_of(
    st.integers(0, 2**40).map(str),
    st.text(alphabet="ab' ", max_size=4).map(lambda s: "'" + s.replace("'", "''") + "'"),
)
comparisons = st.builds(
    lambda n, op, v: (
        f"{n} {op} {v}" if op in ("=", "<>") or not v.startswith("'") else f"{n} = {v}"
    ),
    names,
    st.sampled_from(["=", "<>", ">", "<", ">=", "<="]),
    literals,
)
conditions = st.recursive(
    st.one_of(comparisons, names.map(lambda n: f"{n} IS NULL")),
    lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) AND ({b})", inner, inner),
        st.builds(lambda a, b: f"{a} OR {b}", inner, inner),
        inner.map(lambda a: f"NOT ({a})"),
    ),
    max_leaves=6,
)


@given(conditions)
def test_a_printed_tree_parses_back_to_itself(text: str) -> None:
    printed = str(parse_sql92(text))
    assert str(parse_sql92(printed)) == printed
