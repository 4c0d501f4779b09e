"""decode_messages' batch path against decode_message record by record: the same messages,
and for a malformed buffer the same MessageFormatError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import (
    MessageExt,
    decode_message,
    decode_messages,
    encode_message,
    record_layout,
)
from orbitmq.common import message_decoder as md
from orbitmq.common.errors import MessageFormatError
from tests.unit.common.codec_support import sample_message

HOSTS = [("127.0.0.1", 10911), ("10.1.2.3", 52001), ("::1", 1), ("2001:db8::7", 10911)]


def one_by_one(data: bytes, *, read_body: bool = True) -> list[MessageExt]:
    """The reference: decode_message from one record to the next."""
    messages: list[MessageExt] = []
    position = 0
    while position < len(data):
        message = decode_message(data, position, read_body=read_body)
        messages.append(message)
        position += message.store_size
    return messages


def outcome(decode: object, data: bytes) -> list[MessageExt] | str:
    """The messages, or the text of the MessageFormatError raised."""
    assert callable(decode)
    try:
        result: list[MessageExt] = decode(data)
    except MessageFormatError as exc:
        return f"error: {exc}"
    return result


def test_the_batch_path_is_in_use() -> None:
    # It stands aside if MessageExt's fields no longer match its positional order.
    assert md._POSITIONAL_MESSAGE_EXT


records = st.builds(
    lambda born, store, topic, body, props, offset, physical, flag, sys_flag: encode_message(
        sample_message(
            born_host=born,
            store_host=store,
            topic=topic,
            body=body,
            properties=props,
            queue_offset=offset,
            commit_log_offset=physical,
            flag=flag,
            sys_flag=sys_flag,
        )
    ),
    st.sampled_from(HOSTS),
    st.sampled_from(HOSTS),
    st.sampled_from(["T", "TopicTest", "%RETRY%g", "主题", ""]),
    st.binary(max_size=64),
    st.dictionaries(
        st.text(
            st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\x01\x02"),
            min_size=1,
            max_size=6,
        ),
        st.text(
            st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00\x02"), max_size=8
        ),
        max_size=4,
    ),
    st.integers(0, 2**62),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.sampled_from([0, 0x1, 0x4, 0x8]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(records, max_size=6))
def test_well_formed_records_decode_as_one_by_one(batch: list[bytes]) -> None:
    data = b"".join(batch)
    assert decode_messages(data) == one_by_one(data)
    assert decode_messages(data, read_body=False) == one_by_one(data, read_body=False)
    assert decode_messages(bytearray(data)) == one_by_one(data)
    assert decode_messages(memoryview(data)) == one_by_one(data)


@settings(max_examples=300, deadline=None)
@given(st.lists(records, min_size=1, max_size=4), st.data())
def test_corrupt_buffers_fail_or_decode_as_one_by_one(
    batch: list[bytes], data: st.DataObject
) -> None:
    raw = bytearray(b"".join(batch))
    for _ in range(data.draw(st.integers(1, 3), label="flips")):
        index = data.draw(st.integers(0, len(raw) - 1), label="index")
        raw[index] = data.draw(st.integers(0, 255), label="byte")
    cut = data.draw(st.integers(0, len(raw)), label="cut")
    corrupt = bytes(raw[:cut])
    assert outcome(decode_messages, corrupt) == outcome(one_by_one, corrupt)


def test_message_ids_and_hosts_per_record() -> None:
    data = b"".join(
        encode_message(sample_message(store_host=store, commit_log_offset=physical))
        for store, physical in [(HOSTS[0], 7), (HOSTS[3], 2**40), (HOSTS[0], -1), (HOSTS[1], 0)]
    )
    decoded = decode_messages(data)
    assert [m.msg_id for m in decoded] == [
        "7F00000100002A9F" + "0000000000000007",
        "20010DB8000000000000000000000007" + "00002A9F" + "0000010000000000",
        "7F00000100002A9F" + "FFFFFFFFFFFFFFFF",
        "0A0102030000CB21" + "0000000000000000",
    ]
    assert [m.store_host for m in decoded] == [HOSTS[0], HOSTS[3], HOSTS[0], HOSTS[1]]


def test_property_strings_parse_as_string_to_message_properties() -> None:
    # Pairs without a separator and empty names are skipped; a value may hold \x01; the
    # last pair needs no trailing \x02.
    props = "a\x011\x02noseparator\x02\x01x\x02b\x01has\x01sep\x02\x02c\x013"
    record = md.pack_record(
        sys_flag=0,
        body=b"",
        topic=b"T",
        properties=props.encode(),
        queue_id=0,
        flag=0,
        queue_offset=0,
        physical_offset=0,
        born_timestamp=0,
        born_host=bytes(8),
        store_timestamp=0,
        store_host=bytes(8),
        reconsume_times=0,
        prepared_transaction_offset=0,
    )
    [message] = decode_messages(record)
    assert message.properties == {"a": "1", "b": "has\x01sep", "c": "3"}
    assert decode_messages(record * 3) == one_by_one(record * 3)


def test_a_bad_record_after_good_ones_raises_what_decode_message_raises() -> None:
    good = encode_message(sample_message())
    bad = bytearray(encode_message(sample_message()))
    struct.pack_into(">i", bad, record_layout.MAGICCODE_POSITION, record_layout.BLANK_MAGIC_CODE)
    with pytest.raises(MessageFormatError) as batch_error:
        decode_messages(good + bytes(bad))
    with pytest.raises(MessageFormatError) as single_error:
        decode_message(bytes(bad))
    assert str(batch_error.value) == str(single_error.value)
    with pytest.raises(MessageFormatError, match="too few"):
        decode_messages(good + b"\x00" * 10)
