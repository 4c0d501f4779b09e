"""The body reader: standard JSON untouched, fastjson's unquoted keys quoted, strings never
mistaken for keys."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.protocol import ProtocolError
from orbitmq.protocol.body import BodyError, dumps_body, fastjson_to_standard, loads_body
from orbitmq.protocol.body.json_text import quote_int_keys
from tests.unit.protocol.body.fastjson_style import (
    ObjectKey,
    as_parsed,
    fastjson_dumps,
    same_value,
)

TRICKY = st.text(
    alphabet=st.sampled_from(list('{}[]:,"\\/ 0123456789-.abé€\n\t\x00\U0001f600'))
    | st.characters(codec="utf-8"),
    max_size=12,
)
KEYS = TRICKY | st.integers(-(10**15), 10**15).map(str) | st.sampled_from(["0", "-0", "007"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TRICKY
)


def _with_children(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    object_keys = st.dictionaries(KEYS, SCALARS, max_size=3).map(ObjectKey.of)
    return (
        st.lists(children, max_size=4)
        | st.dictionaries(KEYS, children, max_size=4)
        | st.dictionaries(object_keys, children, max_size=3)
    )


VALUES = st.recursive(SCALARS, _with_children, max_leaves=24)
INT_KEYED_VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=24,
)


@settings(max_examples=120, deadline=None)
@given(VALUES, st.randoms(use_true_random=False))
def test_fastjson_style_text_parses_to_the_same_value(value: Any, rnd: random.Random) -> None:
    assert loads_body(fastjson_dumps(value).encode()) == as_parsed(value)
    # With whitespace inside an object key, the key's text differs but its JSON does not.
    assert same_value(loads_body(fastjson_dumps(value, rnd)), value)


@settings(max_examples=100, deadline=None)
@given(INT_KEYED_VALUES, st.randoms(use_true_random=False))
def test_the_quick_pass_quotes_integer_keys_like_the_token_walk(
    value: Any, rnd: random.Random
) -> None:
    text = fastjson_dumps(value, rnd)
    assert quote_int_keys(text) == fastjson_to_standard(text)
    assert orjson.loads(quote_int_keys(text)) == value


@settings(max_examples=100, deadline=None)
@given(VALUES)
def test_standard_json_passes_through_unchanged(value: Any) -> None:
    text = orjson.dumps(as_parsed(value)).decode()
    assert fastjson_to_standard(text) == text
    assert quote_int_keys(text) == text
    assert loads_body(text) == as_parsed(value)


@pytest.mark.parametrize(
    ("fastjson", "standard"),
    [
        ('{"brokerAddrs":{0:"127.0.0.1:10911"}}', '{"brokerAddrs":{"0":"127.0.0.1:10911"}}'),
        ("{0:1,-1:2, 12 :3}", '{"0":1,"-1":2, "12" :3}'),
        ('{"a":"{0:\\"x\\",1:2}"}', '{"a":"{0:\\"x\\",1:2}"}'),
        ('{"k\\"":"\\\\",3:[{4:5}]}', '{"k\\"":"\\\\","3":[{"4":5}]}'),
        ("[0,1,{2:[3,4]}]", '[0,1,{"2":[3,4]}]'),
        (
            '{{"brokerName":"b","queueId":1,"topic":"t"}:{"brokerOffset":3}}',
            '{"{\\"brokerName\\":\\"b\\",\\"queueId\\":1,\\"topic\\":\\"t\\"}":{"brokerOffset":3}}',
        ),
        ('{{"a":{7:8}}:1}', '{"{\\"a\\":{\\"7\\":8}}":1}'),
        ("{\n\t0:250,\n\t1 :251\n}", '{\n\t"0":250,\n\t"1" :251\n}'),
    ],
)
def test_unquoted_keys_are_quoted(fastjson: str, standard: str) -> None:
    assert fastjson_to_standard(fastjson) == standard
    assert loads_body(fastjson.encode()) == orjson.loads(standard)


@pytest.mark.parametrize(
    "broken",
    [b"", b"{", b'{"a":1', b"{0}", b'{"a" 1}', b"[1,2", b'{"a":"\xff"}', b"nope", b'{"a":}'],
)
def test_what_is_not_json_raises_body_error(broken: bytes) -> None:
    with pytest.raises(BodyError) as raised:
        loads_body(broken)
    assert isinstance(raised.value, ProtocolError)
    assert raised.value.path == ""


def test_standard_json_is_written() -> None:
    assert dumps_body({"a": [1, "é"], "b": None}) == '{"a":[1,"é"],"b":null}'.encode()
    with pytest.raises(BodyError, match="cannot write"):
        dumps_body({"a": 1 << 70})
