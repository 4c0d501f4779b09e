"""hypothesis round trips for the stored-message codec, property strings and client batches."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import (
    Message,
    MessageExtBrokerInner,
    count_batch_messages,
    decode_batch_messages,
    decode_message,
    decode_messages,
    encode_batch_message,
    encode_batch_messages,
    encode_message,
    message_properties_to_string,
    string_to_message_properties,
)
from orbitmq.common.errors import MessageFormatError
from tests.unit.common.codec_support import read_batch, read_record

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
PORTS = st.integers(0, 65535)

TOPIC_CHARS = "%|_-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
topics = st.text(alphabet=TOPIC_CHARS, min_size=1, max_size=127)

# Property names and values: any text but the two separators (and lone surrogates, which
# cannot be encoded as UTF-8). Values are non-empty: RocketMQ's string2messageProperties
# drops pairs with an empty value.
property_text = st.text(
    alphabet=st.characters(exclude_characters="\x01\x02", exclude_categories=["Cs"]),
    min_size=1,
    max_size=20,
)
properties = st.dictionaries(property_text, property_text, max_size=8)

hosts_v4 = st.tuples(st.ip_addresses(v=4).map(str), PORTS)
hosts_v6 = st.tuples(st.ip_addresses(v=6).map(str), PORTS)
hosts = hosts_v4 | hosts_v6


@st.composite
def stored_messages(draw: st.DrawFn) -> MessageExtBrokerInner:
    return MessageExtBrokerInner(
        topic=draw(topics),
        body=draw(st.binary(max_size=1024)),
        flag=draw(INT32),
        properties=draw(properties),
        queue_id=draw(INT32),
        queue_offset=draw(INT64),
        commit_log_offset=draw(INT64),
        # any flags but the IPv6 bits, which the encoder derives from the hosts
        sys_flag=draw(INT32) & ~0x30,
        born_timestamp=draw(INT64),
        born_host=draw(hosts),
        store_timestamp=draw(INT64),
        store_host=draw(hosts),
        reconsume_times=draw(INT32),
        prepared_transaction_offset=draw(INT64),
    )


def expected_sys_flag(message: MessageExtBrokerInner) -> int:
    flag = message.sys_flag
    if ":" in message.born_host[0]:
        flag |= 0x10
    if ":" in message.store_host[0]:
        flag |= 0x20
    return flag


@settings(max_examples=150, deadline=None)
@given(stored_messages())
def test_stored_record_round_trip(message: MessageExtBrokerInner) -> None:
    record = encode_message(message)
    decoded = decode_message(record, check_crc=True)
    assert decoded.topic == message.topic
    assert decoded.body == message.body
    assert decoded.flag == message.flag
    assert decoded.properties == message.properties
    assert decoded.queue_id == message.queue_id
    assert decoded.queue_offset == message.queue_offset
    assert decoded.commit_log_offset == message.commit_log_offset
    assert decoded.sys_flag == expected_sys_flag(message)
    assert decoded.born_timestamp == message.born_timestamp
    assert decoded.born_host == message.born_host
    assert decoded.store_timestamp == message.store_timestamp
    assert decoded.store_host == message.store_host
    assert decoded.reconsume_times == message.reconsume_times
    assert decoded.prepared_transaction_offset == message.prepared_transaction_offset
    assert decoded.store_size == len(record)


@settings(max_examples=100, deadline=None)
@given(stored_messages())
def test_stored_record_layout_read_independently(message: MessageExtBrokerInner) -> None:
    record = encode_message(message)
    raw = read_record(record)
    f = raw.fields
    assert raw.size == f["total_size"] == len(record)
    assert f["sys_flag"] == expected_sys_flag(message)
    assert (f["queue_offset"], f["physical_offset"]) == (
        message.queue_offset,
        message.commit_log_offset,
    )
    assert (f["born_timestamp"], f["store_timestamp"]) == (
        message.born_timestamp,
        message.store_timestamp,
    )
    assert (f["born_host"], f["store_host"]) == (message.born_host, message.store_host)
    assert (f["topic"], f["body"], f["flag"]) == (message.topic, message.body, message.flag)
    assert f["properties_string"] == "".join(
        f"{k}\x01{v}\x02" for k, v in message.properties.items()
    )


@settings(max_examples=50, deadline=None)
@given(st.lists(stored_messages(), max_size=5))
def test_many_records_round_trip(messages: list[MessageExtBrokerInner]) -> None:
    data = b"".join(encode_message(m) for m in messages)
    decoded = decode_messages(data)
    assert [(m.topic, m.body, m.properties) for m in decoded] == [
        (m.topic, m.body, m.properties) for m in messages
    ]


# -- property strings ------------------------------------------------------------------


@settings(max_examples=200)
@given(properties)
def test_properties_string_round_trip(props: dict[str, str]) -> None:
    text = message_properties_to_string(props)
    assert text == "".join(f"{k}\x01{v}\x02" for k, v in props.items())
    parsed = string_to_message_properties(text)
    assert parsed == props
    assert list(parsed) == list(props)  # order kept


def test_properties_string_format() -> None:
    assert message_properties_to_string({}) == ""
    assert message_properties_to_string({"TAGS": "a", "KEYS": "k1 k2"}) == (
        "TAGS\x01a\x02KEYS\x01k1 k2\x02"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", {}),
        ("A\x01b", {"A": "b"}),  # the last pair needs no trailing separator
        ("junk\x02A\x01b\x02", {"A": "b"}),  # a pair without a name/value separator
        ("\x02\x02A\x01b\x02\x02", {"A": "b"}),
        ("\x01v\x02A\x01b\x02", {"A": "b"}),  # no name
        ("A\x011\x02A\x012\x02", {"A": "2"}),  # the last value wins
        ("A\x01b\x01c\x02", {"A": "b\x01c"}),  # split at the first separator only
    ],
)
def test_properties_string_parsing_edge_cases(text: str, expected: dict[str, str]) -> None:
    assert string_to_message_properties(text) == expected


# -- client batches --------------------------------------------------------------------

batch_messages = st.builds(
    Message,
    topic=st.just("BatchTopic"),
    body=st.binary(max_size=512),
    flag=INT32,
    properties=properties,
)


def test_batch_item_golden_bytes() -> None:
    encoded = encode_batch_message(Message("ignored", b"hi", 3, {"a": "b"}))
    assert encoded == bytes.fromhex(
        "0000001C"  # TOTALSIZE 28 = 4*5 + 2 body + 2 + 4 properties
        "00000000"  # MAGICCODE 0
        "00000000"  # BODYCRC 0
        "00000003"  # FLAG
        "00000002 6869"  # BODYLEN, body
        "0004 61 01 62 02"  # PROPERTIESLEN, "a\x01b\x02"
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(batch_messages, max_size=6))
def test_batch_round_trip_and_layout(messages: list[Message]) -> None:
    body = encode_batch_messages(messages)
    items = read_batch(body)
    assert len(items) == len(messages)
    for item, message in zip(items, messages, strict=True):
        props = "".join(f"{k}\x01{v}\x02" for k, v in message.properties.items())
        assert (
            item["total_size"] == item["size"] == 20 + len(message.body) + 2 + len(props.encode())
        )
        assert item["magic"] == 0
        assert item["body_crc"] == 0
        assert item["flag"] == message.flag
        assert item["body"] == message.body
        assert item["properties_string"] == props
    assert decode_batch_messages(body, "BatchTopic") == messages


def test_batch_decode_sets_the_given_topic() -> None:
    body = encode_batch_messages([Message("x", b"1"), Message("y", b"2")])
    assert [m.topic for m in decode_batch_messages(body, "T")] == ["T", "T"]
    assert decode_batch_messages(b"") == []


def test_batch_properties_limit() -> None:
    encode_batch_message(Message("t", b"", 0, {"K": "v" * (32767 - 3)}))
    with pytest.raises(MessageFormatError):
        encode_batch_message(Message("t", b"", 0, {"K": "v" * (32768 - 3)}))


def sample_batch() -> tuple[bytes, list[int]]:
    messages = [Message("t", b"body-%d" % i, i, {"i": str(i)}) for i in range(3)]
    items = [encode_batch_message(m) for m in messages]
    bounds = [sum(len(x) for x in items[:n]) for n in range(len(items) + 1)]
    return b"".join(items), bounds


def test_every_truncated_batch_is_rejected() -> None:
    body, bounds = sample_batch()
    for cut in range(1, len(body)):
        if cut in bounds:
            assert len(decode_batch_messages(body[:cut])) == bounds.index(cut)
            assert count_batch_messages(body[:cut]) == bounds.index(cut)
            continue
        with pytest.raises(MessageFormatError):
            decode_batch_messages(body[:cut])
        with pytest.raises(MessageFormatError):
            count_batch_messages(body[:cut])


@pytest.mark.parametrize(
    ("position", "fmt", "value"),
    [
        (0, ">i", 27),  # TOTALSIZE one short
        (0, ">i", 29),  # TOTALSIZE one long
        (0, ">i", 0),
        (0, ">i", -1),
        (16, ">i", 3),  # BODYLEN one long
        (16, ">i", 1),  # BODYLEN one short
        (16, ">i", -1),
        (16, ">i", -20),
        (16, ">i", 2**31 - 1),
        (22, ">h", 5),  # PROPERTIESLEN one long
        (22, ">h", 3),  # PROPERTIESLEN one short
        (22, ">h", -1),
    ],
)
def test_batch_with_inconsistent_lengths_is_rejected(position: int, fmt: str, value: int) -> None:
    item = bytearray(encode_batch_message(Message("t", b"hi", 0, {"a": "b"})))
    assert len(item) == 28
    struct.pack_into(fmt, item, position, value)
    good = encode_batch_message(Message("t", b"next", 0, {"n": "m"}))
    for body in (bytes(item), bytes(item) + good, good + bytes(item)):
        with pytest.raises(MessageFormatError):
            decode_batch_messages(body)
        with pytest.raises(MessageFormatError):
            count_batch_messages(body)


def test_batch_with_invalid_utf8_properties_is_rejected() -> None:
    item = bytearray(encode_batch_message(Message("t", b"hi", 0, {"a": "b"})))
    item[-2] = 0xFF
    with pytest.raises(MessageFormatError):
        decode_batch_messages(bytes(item))


# -- arbitrary bytes: a format error or a message, never another exception -------------


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=120))
def test_arbitrary_batch_bytes_raise_only_format_errors(data: bytes) -> None:
    try:
        messages = decode_batch_messages(data)
    except MessageFormatError:
        return
    assert sum(len(encode_batch_message(m)) for m in messages) == len(data)


@settings(max_examples=120, deadline=None)
@given(stored_messages(), st.data())
def test_corrupted_records_raise_only_format_errors(
    message: MessageExtBrokerInner, data: st.DataObject
) -> None:
    record = bytearray(encode_message(message))
    for _ in range(data.draw(st.integers(1, 4))):
        index = data.draw(st.integers(0, len(record) - 1))
        record[index] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(record)))
    try:
        decoded = decode_message(bytes(record[:cut]), check_crc=True)
    except MessageFormatError:
        return
    assert decoded.store_size <= cut
