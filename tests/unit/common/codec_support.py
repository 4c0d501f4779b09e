"""An independent reader of RocketMQ's stored-record and batch layouts, and sample records,
for the codec tests.

The reader is written from RocketMQ's ``MessageDecoder`` / ``CommitLog.calMsgLength`` with
``struct`` only: it shares no code or constants with ``orbitmq.common.record_layout`` or the
codec (``message_decoder``), so a layout mistake in them cannot be hidden by decoding with
them.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from typing import Any

from orbitmq.common import MessageExt, MessageExtBrokerInner

MAGIC_MESSAGE = -626843481  # 0xDAA320A7 as Java's signed int
BORN_V6 = 0x10
STORE_V6 = 0x20


@dataclass
class RawRecord:
    fields: dict[str, Any]
    size: int


class _Reader:
    def __init__(self, data: bytes, pos: int = 0):
        self.data = data
        self.pos = pos

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from(">" + fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize(">" + fmt)
        return value

    def raw(self, n: int) -> bytes:
        chunk = self.data[self.pos : self.pos + n]
        assert len(chunk) == n, f"wanted {n} bytes at {self.pos}, buffer ends first"
        self.pos += n
        return chunk

    def host(self, v6: bool) -> tuple[str, int]:
        ip = self.raw(16 if v6 else 4)
        port = self.take("i")
        return str(ipaddress.ip_address(ip)), port


def read_record(data: bytes, pos: int = 0) -> RawRecord:
    """Every field of the stored record at ``pos``, read in RocketMQ's order."""
    r = _Reader(data, pos)
    f: dict[str, Any] = {}
    f["total_size"] = r.take("i")
    f["magic"] = r.take("i")
    f["body_crc"] = r.take("i")
    f["queue_id"] = r.take("i")
    f["flag"] = r.take("i")
    f["queue_offset"] = r.take("q")
    f["physical_offset"] = r.take("q")
    f["sys_flag"] = r.take("i")
    f["born_timestamp"] = r.take("q")
    f["born_host_raw"] = data[r.pos : r.pos + (20 if f["sys_flag"] & BORN_V6 else 8)]
    f["born_host"] = r.host(bool(f["sys_flag"] & BORN_V6))
    f["store_timestamp"] = r.take("q")
    f["store_host_raw"] = data[r.pos : r.pos + (20 if f["sys_flag"] & STORE_V6 else 8)]
    f["store_host"] = r.host(bool(f["sys_flag"] & STORE_V6))
    f["reconsume_times"] = r.take("i")
    f["prepared_transaction_offset"] = r.take("q")
    body_len = r.take("i")
    f["body"] = r.raw(body_len)
    topic_len = r.take("b")
    f["topic"] = r.raw(topic_len).decode("utf-8")
    props_len = r.take("h")
    f["properties_string"] = r.raw(props_len).decode("utf-8")
    return RawRecord(f, r.pos - pos)


def parse_properties(text: str) -> dict[str, str]:
    """``name\\x01value\\x02`` pairs, as RocketMQ's ``string2messageProperties`` reads them."""
    out: dict[str, str] = {}
    for item in text.split("\x02"):
        if not item:
            continue
        name, value = item.split("\x01", 1)
        out[name] = value
    return out


def read_batch(data: bytes) -> list[dict[str, Any]]:
    """The items of a client batch body (``MessageDecoder.encodeMessage`` back to back)."""
    items = []
    r = _Reader(data)
    while r.pos < len(data):
        start = r.pos
        item: dict[str, Any] = {}
        item["total_size"] = r.take("i")
        item["magic"] = r.take("i")
        item["body_crc"] = r.take("i")
        item["flag"] = r.take("i")
        item["body"] = r.raw(r.take("i"))
        item["properties_string"] = r.raw(r.take("h")).decode("utf-8")
        item["size"] = r.pos - start
        items.append(item)
    return items


# topic "T", body b"hi", properties TAGS=a, queue 1, flag 2, queue offset 3, physical offset
# 4, sys flag 0, born at 5 from 127.0.0.1:10911, stored at 6 on 10.0.0.2:10911, reconsumed 7
# times, prepared transaction offset 8. Written out from the layout, field by field.
GOLDEN_CRC = 0x58932AAC  # zlib.crc32(b"hi") & 0x7FFFFFFF
GOLDEN_RECORD = bytes.fromhex(
    "00000065"  # TOTALSIZE 101 = 88 fixed + 2 body + 1 + 1 topic + 2 + 7 properties
    "DAA320A7"  # MAGICCODE
    "58932AAC"  # BODYCRC
    "00000001"  # QUEUEID
    "00000002"  # FLAG
    "00000000 00000003"  # QUEUEOFFSET
    "00000000 00000004"  # PHYSICALOFFSET
    "00000000"  # SYSFLAG
    "00000000 00000005"  # BORNTIMESTAMP
    "7F000001 00002A9F"  # BORNHOST 127.0.0.1, port 10911
    "00000000 00000006"  # STORETIMESTAMP
    "0A000002 00002A9F"  # STOREHOST 10.0.0.2, port 10911
    "00000007"  # RECONSUMETIMES
    "00000000 00000008"  # PREPAREDTRANSACTIONOFFSET
    "00000002 6869"  # BODYLEN, "hi"
    "01 54"  # TOPICLEN, "T"
    "0007 54414753 01 61 02"  # PROPERTIESLEN, "TAGS" \x01 "a" \x02
)


def golden_message() -> MessageExt:
    return MessageExt(
        topic="T",
        body=b"hi",
        flag=2,
        properties={"TAGS": "a"},
        queue_id=1,
        queue_offset=3,
        commit_log_offset=4,
        sys_flag=0,
        born_timestamp=5,
        born_host=("127.0.0.1", 10911),
        store_timestamp=6,
        store_host=("10.0.0.2", 10911),
        reconsume_times=7,
        prepared_transaction_offset=8,
    )


def sample_message(
    born_host: tuple[str, int] = ("192.168.7.21", 52001),
    store_host: tuple[str, int] = ("10.20.30.40", 10911),
    **overrides: object,
) -> MessageExtBrokerInner:
    values: dict[str, object] = {
        "topic": "TopicTest%RETRY|x-y_z",
        "body": bytes(range(256)) * 3,
        "flag": -7,
        "properties": {"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ABCDEF", "中": "文"},
        "queue_id": 13,
        "queue_offset": 2**40 + 5,
        "commit_log_offset": 2**45 + 123,
        "sys_flag": 0x1 | 0x4,  # COMPRESSED_FLAG | TRANSACTION_PREPARED_TYPE
        "born_timestamp": 1_700_000_000_123,
        "born_host": born_host,
        "store_timestamp": 1_700_000_000_456,
        "store_host": store_host,
        "reconsume_times": 3,
        "prepared_transaction_offset": -1,
    }
    values.update(overrides)
    return MessageExtBrokerInner(**values)  # type: ignore[arg-type]
