"""decode_message / decode_messages: round trips, CRC checks, malformed records."""

from __future__ import annotations

import struct

import pytest

from orbitmq.common import (
    BLANK_MAGIC_CODE,
    MessageExt,
    crc32,
    decode_message,
    decode_messages,
    encode_message,
)
from orbitmq.common.errors import MessageFormatError
from tests.unit.common.codec_support import (
    GOLDEN_RECORD,
    golden_message,
    sample_message,
)

# Byte positions in an IPv4/IPv4 record, from RocketMQ's layout.
TOTALSIZE_AT = 0
MAGIC_AT = 4
BODYCRC_AT = 8
BODYLEN_AT = 84
BODY_AT = 88


def assert_same_message(decoded: MessageExt, original: MessageExt, *, physical: int) -> None:
    assert decoded.topic == original.topic
    assert decoded.body == original.body
    assert decoded.flag == original.flag
    assert decoded.properties == original.properties
    assert decoded.queue_id == original.queue_id
    assert decoded.queue_offset == original.queue_offset
    assert decoded.commit_log_offset == physical
    assert decoded.born_timestamp == original.born_timestamp
    assert decoded.born_host == original.born_host
    assert decoded.store_timestamp == original.store_timestamp
    assert decoded.store_host == original.store_host
    assert decoded.reconsume_times == original.reconsume_times
    assert decoded.prepared_transaction_offset == original.prepared_transaction_offset


def test_golden_record_decodes_to_its_fields() -> None:
    decoded = decode_message(GOLDEN_RECORD)
    assert_same_message(decoded, golden_message(), physical=4)
    assert decoded.store_size == 101
    assert decoded.sys_flag == 0
    assert decoded.body_crc == 0x58932AAC
    # offset message id: store host 10.0.0.2, port 10911, physical offset 4
    assert decoded.msg_id == "0A00000200002A9F0000000000000004"


@pytest.mark.parametrize(
    ("born", "store"),
    [
        (("1.2.3.4", 1), ("5.6.7.8", 2)),
        (("2001:db8::1", 1), ("5.6.7.8", 2)),
        (("1.2.3.4", 1), ("2001:db8::2", 10911)),
        (("::1", 1), ("::2", 2)),
    ],
)
def test_round_trip(born: tuple[str, int], store: tuple[str, int]) -> None:
    original = sample_message(born_host=born, store_host=store)
    record = encode_message(original)
    decoded = decode_message(record, check_crc=True)
    assert_same_message(decoded, original, physical=original.commit_log_offset)
    assert decoded.store_size == len(record)
    assert decoded.body_crc == crc32(original.body)


def test_msg_id_is_store_host_and_physical_offset() -> None:
    original = sample_message(store_host=("10.20.30.40", 10911), commit_log_offset=0x1234)
    decoded = decode_message(encode_message(original))
    assert decoded.msg_id == "0A141E28" + "00002A9F" + "0000000000001234"


def test_msg_id_with_ipv6_store_host() -> None:
    original = sample_message(store_host=("2001:db8::2", 10911), commit_log_offset=7)
    decoded = decode_message(encode_message(original))
    assert decoded.msg_id == ("20010DB8000000000000000000000002" + "00002A9F" + "0000000000000007")


def test_decode_at_position_inside_a_larger_buffer() -> None:
    record = encode_message(sample_message())
    buffer = b"\xee" * 37 + record + b"\xff" * 11
    decoded = decode_message(buffer, 37)
    assert decoded.store_size == len(record)
    assert decoded.body == sample_message().body


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_accepts_any_buffer(kind: type) -> None:
    record = encode_message(golden_message())
    assert decode_message(kind(record)).body == b"hi"


def test_read_body_false_skips_the_body() -> None:
    decoded = decode_message(encode_message(sample_message()), read_body=False)
    assert decoded.body == b""
    assert decoded.topic == sample_message().topic


def test_decode_messages_reads_records_back_to_back() -> None:
    originals = []
    data = b""
    for i in range(5):
        born = ("::1", 1000 + i) if i % 2 else ("127.0.0.1", 1000 + i)
        message = sample_message(
            body=f"body-{i}".encode() * i,
            queue_offset=i,
            commit_log_offset=len(data),
            born_host=born,
            properties={"i": str(i)},
        )
        originals.append(message)
        data += encode_message(message)
    decoded = decode_messages(data)
    assert len(decoded) == 5
    for got, want in zip(decoded, originals, strict=True):
        assert_same_message(got, want, physical=want.commit_log_offset)
    assert [m.body for m in decode_messages(data, read_body=False)] == [b""] * 5
    assert decode_messages(b"") == []


def flip(data: bytes, index: int, mask: int = 0x01) -> bytes:
    out = bytearray(data)
    out[index] ^= mask
    return bytes(out)


def test_check_crc_detects_a_flipped_body_bit() -> None:
    record = encode_message(golden_message())
    decode_message(record, check_crc=True)
    for bit in range(8):
        for index in (BODY_AT, BODY_AT + 1):
            corrupt = flip(record, index, 1 << bit)
            with pytest.raises(MessageFormatError, match="CRC"):
                decode_message(corrupt, check_crc=True)
            # without the check the record still parses: CRC checks are opt-in
            assert decode_message(corrupt).body != b"hi"


def test_check_crc_detects_a_corrupt_stored_crc() -> None:
    record = flip(encode_message(golden_message()), BODYCRC_AT + 3)
    with pytest.raises(MessageFormatError):
        decode_message(record, check_crc=True)


def test_bad_magic_code() -> None:
    record = bytearray(encode_message(golden_message()))
    struct.pack_into(">i", record, MAGIC_AT, BLANK_MAGIC_CODE)
    with pytest.raises(MessageFormatError, match="magic"):
        decode_message(bytes(record))
    with pytest.raises(MessageFormatError, match="magic"):
        decode_message(flip(encode_message(golden_message()), MAGIC_AT + 2))


def test_end_of_file_blank_record_is_not_a_message() -> None:
    blank = struct.pack(">ii", 200, BLANK_MAGIC_CODE) + bytes(192)
    with pytest.raises(MessageFormatError):
        decode_message(blank)
    with pytest.raises(MessageFormatError):
        decode_messages(encode_message(golden_message()) + blank)


@pytest.mark.parametrize(
    "hosts", [(("1.2.3.4", 1), ("5.6.7.8", 2)), (("::1", 1), ("::2", 2))], ids=["v4", "v6"]
)
def test_every_truncation_is_rejected(hosts: tuple[tuple[str, int], tuple[str, int]]) -> None:
    record = encode_message(sample_message(born_host=hosts[0], store_host=hosts[1]))
    for cut in range(len(record)):
        with pytest.raises(MessageFormatError):
            decode_message(record[:cut])
    padded = b"\x00" * 5 + record
    for cut in range(5, len(padded)):
        with pytest.raises(MessageFormatError):
            decode_message(padded[:cut], 5)


def test_truncated_second_record_is_rejected_by_decode_messages() -> None:
    one = encode_message(golden_message())
    with pytest.raises(MessageFormatError):
        decode_messages(one + one[:-1])
    with pytest.raises(MessageFormatError):
        decode_messages(one + one[:3])


def with_int(data: bytes, position: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, position, value)
    return bytes(out)


GOLDEN_TOPICLEN_AT = BODY_AT + 2
GOLDEN_PROPSLEN_AT = GOLDEN_TOPICLEN_AT + 2


@pytest.mark.parametrize(
    ("what", "position", "fmt", "value"),
    [
        ("total size one short", TOTALSIZE_AT, ">i", 100),
        ("total size one long", TOTALSIZE_AT, ">i", 102),
        ("total size tiny", TOTALSIZE_AT, ">i", 4),
        ("total size negative", TOTALSIZE_AT, ">i", -1),
        ("body length one long", BODYLEN_AT, ">i", 3),
        ("body length one short", BODYLEN_AT, ">i", 1),
        ("body length negative", BODYLEN_AT, ">i", -2),
        ("body length huge", BODYLEN_AT, ">i", 2**31 - 1),
        ("topic length one long", GOLDEN_TOPICLEN_AT, ">B", 2),
        ("topic length zero", GOLDEN_TOPICLEN_AT, ">B", 0),
        ("topic length 255", GOLDEN_TOPICLEN_AT, ">B", 255),
        ("properties length one long", GOLDEN_PROPSLEN_AT, ">h", 8),
        ("properties length one short", GOLDEN_PROPSLEN_AT, ">h", 6),
        ("properties length negative", GOLDEN_PROPSLEN_AT, ">h", -1),
    ],
)
def test_inconsistent_lengths_are_rejected(what: str, position: int, fmt: str, value: int) -> None:
    record = with_int(GOLDEN_RECORD, position, fmt, value)
    # alone, and followed by another record so that overreads stay inside the buffer
    with pytest.raises(MessageFormatError):
        decode_message(record)
    with pytest.raises(MessageFormatError):
        decode_message(record + GOLDEN_RECORD)
    with pytest.raises(MessageFormatError):
        decode_messages(GOLDEN_RECORD + record)


def test_invalid_utf8_topic_is_a_format_error() -> None:
    record = bytearray(GOLDEN_RECORD)
    record[GOLDEN_TOPICLEN_AT + 1] = 0xFF
    with pytest.raises(MessageFormatError):
        decode_message(bytes(record))


def test_sys_flag_claiming_ipv6_hosts_on_an_ipv4_record() -> None:
    # The host fields then no longer line up: a format error, not a garbage message.
    record = with_int(GOLDEN_RECORD, 36, ">i", 0x10 | 0x20)
    with pytest.raises(MessageFormatError):
        decode_message(record)
