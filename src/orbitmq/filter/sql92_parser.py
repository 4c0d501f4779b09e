"""The SQL92 filter grammar (RocketMQ's ``SelectorParser.jj``) as a Lark LALR grammar, and
the checks RocketMQ makes while it builds the tree (``ComparisonExpression.create*``,
``ConstantExpression.create*``, ``asBooleanExpression``).

``parse_sql92`` turns text into a compiled ``Sql92Expression`` or raises
``Sql92ParseError`` carrying the line and column of the fault. Precedence, lowest first:
OR; AND; ``=``, ``<>``, IS [NOT] NULL; ``> >= < <=``, [NOT] BETWEEN, [NOT] IN,
[NOT] CONTAINS / STARTSWITH / ENDSWITH; unary ``+``, ``-`` and NOT (so ``NOT a = 1`` is
``(NOT a) = 1``, as in RocketMQ). Keywords are case-insensitive; property names are not.

The Lark parser is built once at import; each call gets its own parse state, tree and tree
builder, and the compiled result is immutable, so ``parse_sql92`` may be called from any
thread (the LRU cache in front of it is thread-safe).
"""

from __future__ import annotations

import functools
import math
from typing import Final

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError
from lark.tree import Meta

from orbitmq.filter.java_values import (
    LONG_MAX,
    JavaType,
    Sql92EvaluationError,
    comparator,
    type_of_constant,
)
from orbitmq.filter.sql92_expression import (
    BooleanCast,
    Comparison,
    Constant,
    In,
    IsNull,
    Logic,
    Negate,
    Node,
    Not,
    Property,
    Sql92Expression,
    StringTest,
)
from orbitmq.filter.tag_filter import SubscriptionParseError

GRAMMAR: Final = r"""
?start: or_expr

?or_expr: and_expr
    | or_expr OR and_expr -> or_
?and_expr: equality
    | and_expr AND equality -> and_
?equality: comparison
    | equality "=" comparison -> eq
    | equality "<>" comparison -> ne
    | equality IS NULL -> is_null
    | equality IS NOT NULL -> is_not_null
?comparison: unary
    | comparison ">" unary -> gt
    | comparison ">=" unary -> ge
    | comparison "<" unary -> lt
    | comparison "<=" unary -> le
    | comparison [NOT] (CONTAINS | STARTSWITH | ENDSWITH) STRING -> string_test
    | comparison BETWEEN unary AND unary -> between
    | comparison NOT BETWEEN unary AND unary -> not_between
    | comparison IN "(" STRING ("," STRING)* ")" -> in_
    | comparison NOT IN "(" STRING ("," STRING)* ")" -> not_in
?unary: primary
    | "+" unary
    | "-" unary -> negate
    | NOT unary -> not_
?primary: STRING -> string
    | DECIMAL -> decimal
    | FLOAT -> floating
    | TRUE -> true
    | FALSE -> false
    | NULL -> null
    | ID -> variable
    | "(" or_expr ")"

NOT: "NOT"i
AND: "AND"i
OR: "OR"i
BETWEEN: "BETWEEN"i
IN: "IN"i
TRUE: "TRUE"i
FALSE: "FALSE"i
NULL: "NULL"i
IS: "IS"i
CONTAINS: "CONTAINS"i
STARTSWITH: "STARTSWITH"i
ENDSWITH: "ENDSWITH"i

DECIMAL: /(0|[1-9][0-9]*)[lL]?/
FLOAT.2: /([0-9]+\.[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+/
STRING: /'(''|[^'])*'/
ID: /[a-z_$][a-z0-9_$]*/i

WHITESPACE: /[ \t\n\r\f]+/
LINE_COMMENT: /--[^\n\r]*(\r\n|\n|\r)/
BLOCK_COMMENT: /\/\*[\s\S]*?\*\//
%ignore WHITESPACE
%ignore LINE_COMMENT
%ignore BLOCK_COMMENT
"""

# The basic lexer, as JavaCC's: a keyword is a keyword everywhere (Lark's contextual lexer
# would read "a AND AND b" as a property named AND).
_PARSER: Final = Lark(
    GRAMMAR, parser="lalr", lexer="basic", propagate_positions=True, maybe_placeholders=True
)

#: ``Double.MIN_VALUE``, the smallest positive double: RocketMQ refuses a decimal literal
#: below it (which makes 0.0 itself a refused literal).
_DOUBLE_MIN_VALUE: Final = 5e-324


class Sql92ParseError(SubscriptionParseError):
    """An SQL92 expression RocketMQ's parser would refuse: what is wrong, and the line and
    column (both from 1) where the parser found it."""

    def __init__(self, reason: str, line: int, column: int) -> None:
        super().__init__(f"{reason} at line {line}, column {column}")
        self.reason = reason
        self.line = line
        self.column = column


@functools.lru_cache(maxsize=256)
def parse_sql92(text: str) -> Sql92Expression:
    """Parse and compile ``text``; raises Sql92ParseError. The last 256 expressions that
    compiled are kept (RocketMQ's parse cache), so a subscription sent with every pull is
    parsed once; the result is immutable and may be shared."""
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc) from None
    try:
        builder = _TreeBuilder()
        root = builder.transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, Sql92ParseError):
            raise exc.orig_exc from None
        raise
    # Every alternative of the grammar is a rule, so the tree's root is always a node.
    assert isinstance(root, Node), root
    return Sql92Expression(text, _as_boolean(root, builder.position_of(root)))


def _syntax_error(text: str, exc: UnexpectedInput) -> Sql92ParseError:
    if isinstance(exc, UnexpectedCharacters):
        return Sql92ParseError(
            f"unexpected character {text[exc.pos_in_stream or 0]!r}", exc.line, exc.column
        )
    token = exc.token if isinstance(exc, UnexpectedToken) else None
    if token is None or token.type == "$END":
        lines = text.split("\n")
        return Sql92ParseError(
            f"unexpected end of expression, expected {_expected(exc)}",
            len(lines),
            len(lines[-1]) + 1,
        )
    return Sql92ParseError(
        f"unexpected {token.value!r}, expected {_expected(exc)}", exc.line, exc.column
    )


def _expected(exc: UnexpectedInput) -> str:
    expected = sorted(getattr(exc, "expected", None) or getattr(exc, "allowed", None) or ())
    names = [_TERMINAL_NAMES.get(name, name) for name in expected]
    return " or ".join(dict.fromkeys(names)) or "nothing more"


_TERMINAL_NAMES: Final = {
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "EQUAL": "'='",
    "MORETHAN": "'>'",
    "LESSTHAN": "'<'",
    "PLUS": "'+'",
    "MINUS": "'-'",
    "__ANON_0": "'<>'",
    "__ANON_1": "'>='",
    "__ANON_2": "'<='",
    "STRING": "a string",
    "DECIMAL": "a number",
    "FLOAT": "a number",
    "ID": "a name",
}


#: (line, column) of where a node's text starts.
Position = tuple[int, int]


def _fail(reason: str, at: Position) -> Sql92ParseError:
    return Sql92ParseError(reason, *at)


def _token_position(token: Token) -> Position:
    return (token.line or 1, token.column or 1)


def _as_boolean(node: Node, at: Position) -> Node:
    """``asBooleanExpression``: a condition as is, a property cast, anything else refused."""
    if node.is_boolean:
        return node
    if isinstance(node, Property):
        return BooleanCast(node)
    raise _fail(f"Expression will not result in a boolean value: {node}", at)


def _check_orderable(node: Node, at: Position) -> None:
    """``checkLessThanOperand``: only numbers, properties and arithmetic are ordered."""
    if isinstance(node, Constant):
        if node.type in (JavaType.INTEGER, JavaType.LONG, JavaType.DOUBLE):
            return
        raise _fail(f"Value '{node}' cannot be compared.", at)
    if node.is_boolean:
        raise _fail(f"Value '{node}' cannot be compared.", at)


def _strings(tokens: tuple[Token, ...]) -> tuple[str, ...]:
    return tuple(_unquote(t) for t in tokens if isinstance(t, Token) and t.type == "STRING")


def _unquote(token: Token) -> str:
    return str(token)[1:-1].replace("''", "'")


def _node(child: object) -> Node:
    assert isinstance(child, Node), child
    return child


@v_args(meta=True)
class _TreeBuilder(Transformer[Token, Node]):
    """Lark's parse tree to ``Node``s, with RocketMQ's build-time checks; an error points at
    the operand at fault. One per parse."""

    def __init__(self) -> None:
        super().__init__()
        #: id(node) -> where its text starts (the nodes live as long as this builder's tree).
        self._positions: dict[int, Position] = {}

    def _at(self, node: Node, meta: Meta) -> Node:
        self._positions.setdefault(id(node), (meta.line, meta.column))
        return node

    def position_of(self, node: Node) -> Position:
        return self._positions.get(id(node), (1, 1))

    def _where(self, node: Node, meta: Meta) -> Position:
        return self._positions.get(id(node), (meta.line, meta.column))

    def _boolean(self, node: Node, meta: Meta) -> Node:
        return _as_boolean(node, self._where(node, meta))

    def _ordering(self, operator: str, left: Node, right: Node, meta: Meta) -> Comparison:
        _check_orderable(left, self._where(left, meta))
        _check_orderable(right, self._where(right, meta))
        return Comparison(operator, left, right)

    def _equal(self, left: Node, right: Node, meta: Meta) -> Comparison:
        """``createEqual``: NULL is never an operand of ``=``, and a TRUE / FALSE literal
        on the left may only meet another condition literal."""
        for side in (left, right):
            if isinstance(side, Constant) and side.value is None:
                raise _fail("'NULL' cannot be compared.", self._where(side, meta))
        if (
            isinstance(left, Constant)
            and isinstance(right, Constant)
            and left.is_boolean
            and not right.is_boolean
        ):
            raise _fail(f"'{left}' cannot be compared with '{right}'", self._where(left, meta))
        return Comparison("=", left, right)

    def _in(self, meta: Meta, children: list[object], negated: bool) -> Node:
        operand = _node(children[0])
        if not isinstance(operand, Property):
            raise _fail(
                f"Expected a property for In expression, got: {operand}",
                self._where(operand, meta),
            )
        values = _strings(tuple(c for c in children[1:] if isinstance(c, Token)))
        return self._at(In(operand, values, negated), meta)

    def _check_between_bounds(self, low: Node, high: Node, meta: Meta) -> None:
        """``createBetween``: literal bounds must not be NULL and low may not exceed high."""
        if not (isinstance(low, Constant) and isinstance(high, Constant)):
            return
        at = self._where(low, meta)
        if low.value is None or high.value is None:
            raise _fail("Illegal values of between, values can not be null!", at)
        try:
            order = comparator(high.type, low.type)(high.value, low.value)
        except Sql92EvaluationError as exc:
            raise _fail(f"Illegal values of between: {exc}", at) from None
        if order < 0:
            raise _fail(
                f"Illegal values of between, left value({low}) must less than or equal to "
                f"right value({high})",
                at,
            )

    def or_(self, meta: Meta, children: list[Node]) -> Node:
        left, _, right = children
        logic = Logic("OR", self._boolean(left, meta), self._boolean(right, meta))
        return self._at(logic, meta)

    def and_(self, meta: Meta, children: list[Node]) -> Node:
        left, _, right = children
        logic = Logic("AND", self._boolean(left, meta), self._boolean(right, meta))
        return self._at(logic, meta)

    def eq(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(self._equal(children[0], children[1], meta), meta)

    def ne(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(Not(self._equal(children[0], children[1], meta)), meta)

    def is_null(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(IsNull(children[0], negated=False), meta)

    def is_not_null(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(IsNull(children[0], negated=True), meta)

    def gt(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(self._ordering(">", children[0], children[1], meta), meta)

    def ge(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(self._ordering(">=", children[0], children[1], meta), meta)

    def lt(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(self._ordering("<", children[0], children[1], meta), meta)

    def le(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(self._ordering("<=", children[0], children[1], meta), meta)

    def string_test(self, meta: Meta, children: list[object]) -> Node:
        operand, negation, operator, search = children
        assert isinstance(operand, Node) and isinstance(search, Token)
        test = StringTest(str(operator).upper(), operand, _unquote(search), negation is not None)
        return self._at(test, meta)

    def between(self, meta: Meta, children: list[Node]) -> Node:
        value, _, low, _, high = children
        self._check_between_bounds(low, high, meta)
        at_least = self._ordering(">=", value, low, meta)
        return self._at(Logic("AND", at_least, self._ordering("<=", value, high, meta)), meta)

    def not_between(self, meta: Meta, children: list[Node]) -> Node:
        value, _, _, low, _, high = children
        below = self._ordering("<", value, low, meta)
        return self._at(Logic("OR", below, self._ordering(">", value, high, meta)), meta)

    def in_(self, meta: Meta, children: list[object]) -> Node:
        return self._in(meta, children, negated=False)

    def not_in(self, meta: Meta, children: list[object]) -> Node:
        return self._in(meta, children, negated=True)

    def negate(self, meta: Meta, children: list[Node]) -> Node:
        return self._at(Negate(_node(children[-1])), meta)

    def not_(self, meta: Meta, children: list[Node]) -> Node:
        operand = _node(children[-1])
        return self._at(Not(self._boolean(operand, meta)), meta)

    def string(self, meta: Meta, children: list[Token]) -> Node:
        return self._at(Constant(_unquote(children[0]), JavaType.STRING), meta)

    def decimal(self, meta: Meta, children: list[Token]) -> Node:
        return self._at(_decimal(children[0]), meta)

    def floating(self, meta: Meta, children: list[Token]) -> Node:
        return self._at(_floating(children[0]), meta)

    def true(self, meta: Meta, children: list[Token]) -> Node:
        return self._at(Constant(True, JavaType.BOOLEAN), meta)

    def false(self, meta: Meta, children: list[Token]) -> Node:
        return self._at(Constant(False, JavaType.BOOLEAN), meta)

    def null(self, meta: Meta, children: list[Token]) -> Node:
        return self._at(Constant(None, JavaType.NULL), meta)

    def variable(self, meta: Meta, children: list[Token]) -> Node:
        return self._at(Property(str(children[0])), meta)


def _decimal(token: Token) -> Node:
    """``createFromDecimal``: an optional L suffix dropped; Integer when it fits, else Long."""
    digits = str(token).rstrip("lL")
    value = int(digits)
    if value > LONG_MAX:
        raise _fail(f'For input string: "{digits}" (beyond Long\'s range)', _token_position(token))
    return Constant(value, type_of_constant(value))


def _floating(token: Token) -> Node:
    """``createFloat``: a Double, refused beyond Double.MAX_VALUE and below
    Double.MIN_VALUE (so 0.0 is refused, as RocketMQ refuses it)."""
    value = float(str(token))
    if math.isinf(value):
        raise _fail(f"{token} is greater than 1.7976931348623157E308", _token_position(token))
    if value < _DOUBLE_MIN_VALUE:
        raise _fail(f"{token} is less than 4.9E-324", _token_position(token))
    return Constant(value, JavaType.DOUBLE)
