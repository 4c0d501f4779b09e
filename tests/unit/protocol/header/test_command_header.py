"""CommandHeader: parsing as strict as RocketMQ's types and as lenient as real clients, errors
that name the key, the value and why, and extFields written the way RocketMQ writes them."""

from __future__ import annotations

import dataclasses
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.protocol import ProtocolError
from orbitmq.protocol.header import (
    CommandHeader,
    CreateTopicRequestHeader,
    EndTransactionRequestHeader,
    HeaderError,
    Int32,
    SendMessageRequestHeaderV2,
    ext_field,
)


class Probe(CommandHeader):
    name: str = ext_field("name")
    count: Int32 = ext_field("count")
    offset: int = ext_field("offset")
    flag: bool = ext_field("flag", default=False)
    note: str | None = ext_field("note", default=None)
    limit: Int32 | None = ext_field("limit", default=None)
    maybe: bool | None = ext_field("maybe", default=None)


REQUIRED = {"name": "n", "count": "1", "offset": "2"}


def parse(**overrides: str) -> Probe:
    return Probe.from_ext_fields({**REQUIRED, **overrides})


def error_of(**overrides: str) -> str:
    with pytest.raises(HeaderError) as raised:
        parse(**overrides)
    return str(raised.value)


def test_parses_each_type_and_fills_defaults() -> None:
    assert parse() == Probe(name="n", count=1, offset=2)
    assert parse(flag="true", note="x", limit="-7", maybe="false") == Probe(
        name="n", count=1, offset=2, flag=True, note="x", limit=-7, maybe=False
    )


def test_unknown_keys_are_ignored() -> None:
    assert parse(AccessKey="", Signature="abc=", OnsChannel="ALIYUN") == parse()


def test_a_missing_required_key_is_named() -> None:
    with pytest.raises(HeaderError, match=r"^count is required$") as raised:
        Probe.from_ext_fields({"name": "n", "offset": "2"})
    assert (raised.value.field, raised.value.value) == ("count", None)
    assert isinstance(raised.value, ProtocolError)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("abc", "count: 'abc' is not an integer"),
        ("", "count: '' is not an integer"),
        (" 4", "count: ' 4' is not an integer"),
        ("4 ", "count: '4 ' is not an integer"),
        ("1_000", "count: '1_000' is not an integer"),
        ("4.0", "count: '4.0' is not an integer"),
        ("-", "count: '-' is not an integer"),
        ("\u0664", "count: '\u0664' is not an integer"),  # an Arabic-Indic four
        ("2147483648", "count: '2147483648' is outside the 32-bit range"),
        ("-2147483649", "count: '-2147483649' is outside the 32-bit range"),
    ],
)
def test_a_bad_integer_is_named_with_its_value(text: str, message: str) -> None:
    assert error_of(count=text).startswith(message)


def test_integer_ranges_follow_java_int_and_long() -> None:
    assert parse(count="2147483647", offset="-9223372036854775808").offset == -(2**63)
    assert parse(count="-2147483648").count == -(2**31)
    assert parse(count="+5", offset="007").offset == 7  # as Integer.parseInt reads them
    assert "outside the 64-bit range" in error_of(offset="9223372036854775808")
    assert "outside the 64-bit range" in error_of(offset="9" * 5000)


def test_booleans_as_java_and_cpp_clients_write_them() -> None:
    for text, value in [("true", True), ("false", False), ("TRUE", True), ("False", False)]:
        assert parse(flag=text).flag is value
    assert parse(flag="1").flag is True
    assert parse(flag="0").flag is False
    assert error_of(flag="yes") == "flag: 'yes' is not a boolean (true or false)"


def test_long_values_are_cut_short_in_messages() -> None:
    message = error_of(count="x" * 10_000)
    assert len(message) < 120
    assert message.startswith("count: 'xxxx") and "...' is not an integer" in message


def test_v2_errors_explain_the_short_keys() -> None:
    ext = {"a": "g", "b": "t", "c": "TBW102", "d": "4", "e": "abc", "f": "0", "g": "1", "h": "0"}
    with pytest.raises(HeaderError, match=r"^e \(queueId\): 'abc' is not an integer$"):
        SendMessageRequestHeaderV2.from_ext_fields(ext)
    del ext["a"]
    with pytest.raises(HeaderError, match=r"^a \(producerGroup\) is required$"):
        SendMessageRequestHeaderV2.from_ext_fields(ext)


def test_writes_non_none_fields_as_rocketmq_does() -> None:
    probe = Probe(name="n", count=-3, offset=2**40, flag=True, maybe=False)
    assert probe.to_ext_fields() == {
        "name": "n",
        "count": "-3",
        "offset": "1099511627776",
        "flag": "true",
        "maybe": "false",
    }
    assert Probe(name="", count=0, offset=0).to_ext_fields() == {
        "name": "",
        "count": "0",
        "offset": "0",
        "flag": "false",
    }


def test_headers_are_frozen_keyword_only_values() -> None:
    probe = parse()
    with pytest.raises(dataclasses.FrozenInstanceError):
        probe.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Probe("n", 1, 2)  # type: ignore[call-arg]
    assert hash(probe) == hash(Probe(name="n", count=1, offset=2))
    assert Probe.ext_keys()["count"] == "count"


def test_a_class_must_say_each_fields_key_and_use_supported_types() -> None:
    with pytest.raises(TypeError, match=r"Bad\.x needs ext_field"):

        class Bad(CommandHeader):
            x: int = 0

    with pytest.raises(TypeError, match=r"Worse\.x is .*float"):

        class Worse(CommandHeader):
            x: float = ext_field("x")

    with pytest.raises(TypeError, match=r"Vague\.x is optional and has no default"):

        class Vague(CommandHeader):
            x: int | None = ext_field("x")

    with pytest.raises(TypeError, match=r"check\(\)"):

        class Hooked(CommandHeader):
            x: int = ext_field("x")

            def __post_init__(self) -> None:
                pass


END_TRANSACTION = {
    "producerGroup": "PID",
    "tranStateTableOffset": "3",
    "commitLogOffset": "1024",
    "commitOrRollback": "8",
    "msgId": "7F00000100002A9F0000000000000400",
}


@pytest.mark.parametrize(("verdict", "expected"), [("0", 0), ("8", 8), ("12", 12)])
def test_end_transaction_verdicts(verdict: str, expected: int) -> None:
    header = EndTransactionRequestHeader.from_ext_fields(
        {**END_TRANSACTION, "commitOrRollback": verdict, "fromTransactionCheck": "1"}
    )
    assert (header.commit_or_rollback, header.from_transaction_check) == (expected, True)


def test_end_transaction_rejects_other_verdicts() -> None:
    with pytest.raises(HeaderError, match=r"^commitOrRollback: '4' is not 0 \(unknown\)"):
        EndTransactionRequestHeader.from_ext_fields({**END_TRANSACTION, "commitOrRollback": "4"})


def test_create_topic_checks_the_filter_type_and_needs_order() -> None:
    ext = {
        "topic": "T",
        "defaultTopic": "TBW102",
        "readQueueNums": "8",
        "writeQueueNums": "8",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "order": "false",
    }
    header = CreateTopicRequestHeader.from_ext_fields(ext)
    assert (header.read_queue_nums, header.perm, header.topic_sys_flag) == (8, 6, None)
    with pytest.raises(HeaderError, match=r"^topicFilterType: 'ANY_TAG' is not SINGLE_TAG"):
        CreateTopicRequestHeader.from_ext_fields({**ext, "topicFilterType": "ANY_TAG"})
    del ext["order"]
    with pytest.raises(HeaderError, match=r"^order is required$"):
        CreateTopicRequestHeader.from_ext_fields(ext)


JAVA_LONG = re.compile(r"[+-]?[0-9]+")


@settings(max_examples=300)
@given(
    st.one_of(st.text(max_size=24), st.integers().map(str), st.integers().map(lambda i: f"+{i}"))
)
def test_integers_parse_exactly_when_java_would(text: str) -> None:
    try:
        value = parse(offset=text).offset
    except HeaderError as error:
        assert error.field == "offset"
        assert error.value == text
        assert not JAVA_LONG.fullmatch(text) or not -(2**63) <= int(text) < 2**63
    else:
        assert JAVA_LONG.fullmatch(text)
        assert value == int(text)
