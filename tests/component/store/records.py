"""An independent reader of the store's files, written from RocketMQ's byte layout.

Tests decode what the store wrote with this instead of the store's own decoder, so a bug in
the codec cannot hide itself.
"""

from __future__ import annotations

import os
import socket
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from orbitmq.store import GetMessageStatus, MessageStore

MESSAGE_MAGIC = -626843481  # 0xDAA320A7 as a signed int32
BLANK_MAGIC = -875286124  # 0xCBD43194 as a signed int32
BORNHOST_V6 = 0x1 << 4
STOREHOST_V6 = 0x1 << 5

# TOTALSIZE MAGICCODE BODYCRC QUEUEID FLAG QUEUEOFFSET PHYSICALOFFSET SYSFLAG BORNTIMESTAMP
_HEAD = struct.Struct(">iiiiiqqiq")
_IPV4_HOST = struct.Struct(">4si")
# STORETIMESTAMP after the born host; RECONSUMETIMES PREPAREDTRANSACTIONOFFSET BODYLEN after
# the store host.
_Q = struct.Struct(">q")
_TAIL = struct.Struct(">iqi")
_CQ_UNIT = struct.Struct(">qiq")
INDEX_HEADER = struct.Struct(">qqqqii")


@dataclass
class Record:
    total_size: int
    magic: int
    body_crc: int
    queue_id: int
    flag: int
    queue_offset: int
    physical_offset: int
    sys_flag: int
    born_timestamp: int
    born_host: tuple[str, int]
    store_timestamp: int
    store_host: tuple[str, int]
    reconsume_times: int
    prepared_transaction_offset: int
    body: bytes
    topic: str
    properties: dict[str, str]


def parse_record(data: bytes | bytearray | memoryview, position: int = 0) -> Record:
    """Decode the IPv4 record at ``position`` field by field."""
    data = bytes(data)
    head = _HEAD.unpack_from(data, position)
    total, magic, crc, queue_id, flag, queue_offset, phy, sys_flag, born_ts = head
    assert magic == MESSAGE_MAGIC, f"magic {magic & 0xFFFFFFFF:#x} at {position}"
    assert not sys_flag & (BORNHOST_V6 | STOREHOST_V6), "these tests use IPv4 hosts"
    pos = position + _HEAD.size
    born_ip, born_port = _IPV4_HOST.unpack_from(data, pos)
    pos += 8
    store_ts = _Q.unpack_from(data, pos)[0]
    pos += 8
    store_ip, store_port = _IPV4_HOST.unpack_from(data, pos)
    pos += 8
    reconsume, prepared, body_len = _TAIL.unpack_from(data, pos)
    pos += _TAIL.size
    body = data[pos : pos + body_len]
    pos += body_len
    topic_len = data[pos]
    topic = data[pos + 1 : pos + 1 + topic_len].decode()
    pos += 1 + topic_len
    (props_len,) = struct.unpack_from(">h", data, pos)
    props_text = data[pos + 2 : pos + 2 + props_len].decode()
    pos += 2 + props_len
    assert pos - position == total, f"fields add up to {pos - position}, TOTALSIZE is {total}"
    assert zlib.crc32(body) & 0x7FFFFFFF == crc, "BODYCRC"
    properties = {}
    for item in props_text.split("\x02"):
        if "\x01" in item:
            name, value = item.split("\x01", 1)
            properties[name] = value
    return Record(
        total,
        magic,
        crc,
        queue_id,
        flag,
        queue_offset,
        phy,
        sys_flag,
        born_ts,
        (socket.inet_ntoa(born_ip), born_port),
        store_ts,
        (socket.inet_ntoa(store_ip), store_port),
        reconsume,
        prepared,
        body,
        topic,
        properties,
    )


def java_hash(text: str) -> int:
    """Java's String.hashCode (ASCII/BMP text), signed 32-bit."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def offset_msg_id(host: tuple[str, int], offset: int) -> str:
    """RocketMQ's offset message id: IPv4 (4), port (4), commit log offset (8), upper hex."""
    raw = socket.inet_aton(host[0]) + struct.pack(">iq", host[1], offset)
    return raw.hex().upper()


def file_name(offset: int) -> str:
    return str(offset).rjust(20, "0")


def list_files(directory: str | Path) -> list[str]:
    directory = str(directory)
    return sorted(os.listdir(directory)) if os.path.isdir(directory) else []


def read_commit_log(directory: str | Path, offset: int, size: int, file_size: int) -> bytes:
    """``size`` bytes at commit log ``offset``, read from the file with plain file I/O."""
    start = offset - offset % file_size
    with open(os.path.join(str(directory), file_name(start)), "rb") as handle:
        handle.seek(offset - start)
        return handle.read(size)


def read_cq_units(path: str | Path) -> list[tuple[int, int, int]]:
    """Every written unit (commit log offset, size, tag code) of a consume-queue file."""
    data = Path(path).read_bytes()
    units = []
    for unit in _CQ_UNIT.iter_unpack(data):
        if unit == (0, 0, 0):
            break
        units.append(unit)
    return units


def read_bodies(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    """The bodies of a queue from its min offset to its end, read through the store and
    decoded here."""
    bodies: list[bytes] = []
    offset = store.get_min_offset_in_queue(topic, queue_id)
    while offset < store.get_max_offset_in_queue(topic, queue_id):
        got = store.get_message("g", topic, queue_id, offset, 32)
        assert got.status is GetMessageStatus.FOUND, got.status
        bodies += [parse_record(b).body for b in got.message_buffers]
        offset = got.next_begin_offset
    return bodies
