"""The stored-record byte layout (RocketMQ's ``MessageDecoder``), checked field by field.

Records made by ``encode_message`` / ``pack_record`` are read back with the independent reader
in ``codec_support`` (plain ``struct``), and one small record is compared with bytes written
out by hand from the layout.
"""

from __future__ import annotations

import ipaddress
import struct
import zlib

import pytest

from orbitmq.common import (
    MESSAGE_MAGIC_CODE,
    calc_msg_length,
    crc32,
    encode_message,
)
from orbitmq.common import sys_flag as sf
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.message_decoder import pack_record
from tests.unit.common.codec_support import (
    BORN_V6,
    GOLDEN_CRC,
    GOLDEN_RECORD,
    MAGIC_MESSAGE,
    STORE_V6,
    golden_message,
    parse_properties,
    read_record,
    sample_message,
)


def test_golden_crc_is_zlibs() -> None:
    assert zlib.crc32(b"hi") & 0x7FFFFFFF == GOLDEN_CRC
    assert crc32(b"hi") == GOLDEN_CRC


def test_golden_record_matches_hand_written_bytes() -> None:
    assert encode_message(golden_message()) == GOLDEN_RECORD


def test_golden_record_through_pack_record() -> None:
    record = pack_record(
        sys_flag=0,
        body=b"hi",
        topic=b"T",
        properties=b"TAGS\x01a\x02",
        queue_id=1,
        flag=2,
        queue_offset=3,
        physical_offset=4,
        born_timestamp=5,
        born_host=bytes([127, 0, 0, 1]) + struct.pack(">i", 10911),
        store_timestamp=6,
        store_host=bytes([10, 0, 0, 2]) + struct.pack(">i", 10911),
        reconsume_times=7,
        prepared_transaction_offset=8,
    )
    assert record == GOLDEN_RECORD
    assert calc_msg_length(0, 2, 1, 7) == 101 == len(record)


def test_magic_code_constant_is_rocketmqs() -> None:
    assert MESSAGE_MAGIC_CODE == MAGIC_MESSAGE
    assert struct.pack(">i", MESSAGE_MAGIC_CODE) == bytes.fromhex("DAA320A7")


HOSTS = {
    "v4/v4": (("192.168.7.21", 52001), ("10.20.30.40", 10911)),
    "v6/v4": (("2001:db8::17", 52001), ("10.20.30.40", 10911)),
    "v4/v6": (("192.168.7.21", 52001), ("fe80::1:2:3:4", 10911)),
    "v6/v6": (("::1", 65535), ("2001:db8:85a3::8a2e:370:7334", 1)),
}


@pytest.mark.parametrize("hosts", HOSTS.values(), ids=HOSTS.keys())
def test_every_field_read_back_independently(
    hosts: tuple[tuple[str, int], tuple[str, int]],
) -> None:
    born, store = hosts
    message = sample_message(born_host=born, store_host=store)
    record = encode_message(message)
    raw = read_record(record)
    f = raw.fields

    assert raw.size == len(record) == f["total_size"]
    assert f["magic"] == MAGIC_MESSAGE
    assert f["body_crc"] == zlib.crc32(message.body) & 0x7FFFFFFF
    assert f["queue_id"] == 13
    assert f["flag"] == -7
    assert f["queue_offset"] == 2**40 + 5
    assert f["physical_offset"] == 2**45 + 123
    born_v6 = ":" in born[0]
    store_v6 = ":" in store[0]
    expected_flag = 0x1 | 0x4 | (BORN_V6 if born_v6 else 0) | (STORE_V6 if store_v6 else 0)
    assert f["sys_flag"] == expected_flag
    assert f["born_timestamp"] == 1_700_000_000_123
    assert f["born_host"] == born
    assert f["born_host_raw"] == ipaddress.ip_address(born[0]).packed + struct.pack(">i", born[1])
    assert f["store_timestamp"] == 1_700_000_000_456
    assert f["store_host"] == store
    assert f["store_host_raw"] == (
        ipaddress.ip_address(store[0]).packed + struct.pack(">i", store[1])
    )
    assert f["reconsume_times"] == 3
    assert f["prepared_transaction_offset"] == -1
    assert f["body"] == message.body
    assert f["topic"] == "TopicTest%RETRY|x-y_z"
    assert parse_properties(f["properties_string"]) == message.properties
    assert f["properties_string"] == (
        "TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x01ABCDEF\x02中\x01文\x02"
    )

    props_bytes = len(f["properties_string"].encode())
    assert len(record) == calc_msg_length(
        f["sys_flag"], len(message.body), len(b"TopicTest%RETRY|x-y_z"), props_bytes
    )


@pytest.mark.parametrize(
    ("sys_flag", "prefix"),
    [(0, 88), (BORN_V6, 100), (STORE_V6, 100), (BORN_V6 | STORE_V6, 112)],
)
def test_calc_msg_length_matches_rocketmq(sys_flag: int, prefix: int) -> None:
    # calMsgLength: 4+4+4+4+4+8+8+4+8+born(8|20)+8+store(8|20)+4+8 +4+body +1+topic +2+props
    assert calc_msg_length(sys_flag, 0, 0, 0) == prefix + 3
    assert calc_msg_length(sys_flag, 10, 5, 20) == prefix + 10 + 1 + 5 + 2 + 20


def test_ipv6_flags_follow_the_hosts_not_the_given_sys_flag() -> None:
    # v6 bits claimed for IPv4 hosts are cleared; v6 hosts set them even when absent.
    wrong = sample_message(sys_flag=BORN_V6 | STORE_V6 | sf.MULTI_TAGS_FLAG)
    assert read_record(encode_message(wrong)).fields["sys_flag"] == sf.MULTI_TAGS_FLAG
    missing = sample_message(
        born_host=("::1", 1), store_host=("::2", 2), sys_flag=sf.MULTI_TAGS_FLAG
    )
    assert read_record(encode_message(missing)).fields["sys_flag"] == (
        sf.MULTI_TAGS_FLAG | BORN_V6 | STORE_V6
    )


def test_properties_string_argument_is_written_verbatim() -> None:
    message = sample_message(properties={"TAGS": "ignored"})
    record = encode_message(message, "A\x01b\x02C\x01d\x02")
    assert read_record(record).fields["properties_string"] == "A\x01b\x02C\x01d\x02"


def test_empty_body_and_properties() -> None:
    message = sample_message(body=b"", properties={})
    record = encode_message(message)
    f = read_record(record).fields
    assert f["body"] == b""
    assert f["body_crc"] == 0  # crc32 of nothing
    assert f["properties_string"] == ""
    assert len(record) == 88 + 3 + len(message.topic)


def test_pack_record_uses_a_given_crc() -> None:
    record = pack_record(
        sys_flag=0,
        body=b"hi",
        topic=b"T",
        properties=b"",
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
        crc=12345,
    )
    assert read_record(record).fields["body_crc"] == 12345


def test_topic_of_127_bytes_fits_and_128_does_not() -> None:
    record = encode_message(sample_message(topic="t" * 127))
    assert read_record(record).fields["topic"] == "t" * 127
    with pytest.raises(MessageFormatError, match="128"):
        encode_message(sample_message(topic="t" * 128))


def test_properties_limit_is_short_max() -> None:
    # "K\x01" + value + "\x02" is 3 bytes of overhead.
    fits = sample_message(properties={"K": "v" * (32767 - 3)})
    f = read_record(encode_message(fits)).fields
    assert len(f["properties_string"]) == 32767
    too_long = sample_message(properties={"K": "v" * (32768 - 3)})
    with pytest.raises(MessageFormatError, match="32768"):
        encode_message(too_long)
