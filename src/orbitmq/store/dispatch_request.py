"""DispatchRequest: what the dispatchers need of one record, parsed from commit log bytes.

``check_message_and_return_size`` is RocketMQ's parser of the same name: it walks the log
during reput and recovery, validating each record and extracting topic, queue, offsets, tag
hash code and keys.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Final

from orbitmq.common import message_const as mc
from orbitmq.common.java_hash import java_string_hash
from orbitmq.common.message_decoder import (
    BLANK_MAGIC_CODE,
    MESSAGE_MAGIC_CODE,
    record_prefix,
)
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC

_HEAD: Final = struct.Struct(">ii")
#: TOTALSIZE, MAGICCODE and SYSFLAG (at 36) in one read.
_HEAD_AND_FLAG: Final = struct.Struct(">ii28xi")
_PROPS_LEN: Final = struct.Struct(">h")
_CACHE_LIMIT: Final = 65536
_TAGS: Final = mc.PROPERTY_TAGS.encode() + b"\x01"
_KEYS: Final = mc.PROPERTY_KEYS.encode() + b"\x01"
_UNIQ_KEY: Final = mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX.encode() + b"\x01"
_DELAY: Final = mc.PROPERTY_DELAY_TIME_LEVEL.encode() + b"\x01"

_tags_codes: dict[str, int] = {}
_topics: dict[bytes, str] = {}


@dataclass(slots=True)
class DispatchRequest:
    """One parsed record, or the end of a file, or an invalid record.

    ``msg_size`` > 0: a valid record. 0 with ``success``: the end-of-file blank record (or
    nothing left). -1 / not ``success``: bytes that are not a valid record.
    """

    msg_size: int
    success: bool
    topic: str = ""
    queue_id: int = 0
    commit_log_offset: int = 0
    tags_code: int = 0
    store_timestamp: int = 0
    consume_queue_offset: int = 0
    keys: str = ""
    uniq_key: str | None = None
    sys_flag: int = 0
    prepared_transaction_offset: int = 0
    #: Why the record is invalid, for recovery's report.
    problem: str = ""


def tags_string_to_tags_code(tags: str) -> int:
    """The consume-queue tag code of a TAGS value: Java's ``String.hashCode``."""
    code = _tags_codes.get(tags)
    if code is None:
        code = java_string_hash(tags)
        if len(_tags_codes) >= _CACHE_LIMIT:
            _tags_codes.clear()
        _tags_codes[tags] = code
    return code


def _cache_topic(raw: bytes) -> str:
    topic = raw.decode()
    if len(_topics) >= _CACHE_LIMIT:
        _topics.clear()
    _topics[raw] = topic
    return topic


def _property(data: bytes, name: bytes, start: int, end: int) -> str | None:
    """The value of property ``name`` (given with its trailing \\x01) in the property
    string at ``data[start:end]``, found without parsing the others."""
    at = data.find(name, start, end)
    while at > start and data[at - 1] != 2:
        at = data.find(name, at + 1, end)
    if at < 0:
        return None
    value_at = at + len(name)
    value_end = data.find(b"\x02", value_at, end)
    return data[value_at : value_end if value_end >= 0 else end].decode()


def _delay_ms(data: bytes, start: int, end: int, delay_levels_ms: tuple[int, ...]) -> int:
    raw = _property(data, _DELAY, start, end)
    level = int(raw) if raw and raw.isdigit() else 1
    return delay_levels_ms[min(max(level, 1), len(delay_levels_ms)) - 1]


def _invalid(problem: str) -> DispatchRequest:
    return DispatchRequest(-1, False, problem=problem)


def check_message_and_return_size(
    data: bytes,
    position: int,
    check_crc: bool,
    delay_levels_ms: tuple[int, ...] = (),
) -> DispatchRequest:
    """Parse the record starting at ``position`` of ``data``.

    ``data`` ends where readable bytes end; a record running past it is invalid. It is
    ``bytes`` (not a view) so properties are searched in place without copies.
    ``delay_levels_ms`` lets SCHEDULE_TOPIC_XXXX records carry their delivery time as tag
    code, as RocketMQ's schedule service expects.
    """
    remaining = len(data) - position
    if remaining >= 40:
        total, magic, sys_flag = _HEAD_AND_FLAG.unpack_from(data, position)
    elif remaining >= 8:
        total, magic = _HEAD.unpack_from(data, position)
        sys_flag = 0
    else:
        return DispatchRequest(0, True) if remaining == 0 else _invalid("truncated record head")
    if magic != MESSAGE_MAGIC_CODE:
        if magic == BLANK_MAGIC_CODE:
            return DispatchRequest(0, True)
        return _invalid(f"illegal magic code {magic & 0xFFFFFFFF:#010x}")
    prefix = record_prefix(sys_flag)
    if total < prefix.size + 3 or total > remaining:
        return _invalid(f"total size {total} does not fit the {remaining} readable bytes")
    (
        _total,
        _magic,
        crc,
        queue_id,
        _flag,
        queue_offset,
        physical_offset,
        _sys_flag,
        _born_ts,
        _born_host,
        store_ts,
        _store_host,
        _reconsume,
        prepared_offset,
        body_len,
    ) = prefix.unpack_from(data, position)
    pos = position + prefix.size
    if body_len < 0 or body_len > total:
        return _invalid(f"body length {body_len} does not fit total size {total}")
    if check_crc and zlib.crc32(data[pos : pos + body_len]) & 0x7FFFFFFF != crc:
        return _invalid(f"body CRC mismatch at physical offset {physical_offset}")
    pos += body_len
    topic_len = data[pos]
    raw_topic = data[pos + 1 : pos + 1 + topic_len]
    pos += 1 + topic_len
    props_len = _PROPS_LEN.unpack_from(data, pos)[0]
    end = pos + 2 + props_len
    if end != position + total:
        return _invalid(f"record fields add up to {end - position}, not {total}")
    tags_code = 0
    keys = ""
    uniq_key = None
    try:
        topic = _topics.get(raw_topic) or _cache_topic(raw_topic)
        if props_len:
            start = pos + 2
            # find() first: most records lack some of these, and a miss costs no call.
            if data.find(_TAGS, start, end) >= 0:
                tags = _property(data, _TAGS, start, end)
                if tags:
                    tags_code = tags_string_to_tags_code(tags)
            if data.find(_KEYS, start, end) >= 0:
                keys = _property(data, _KEYS, start, end) or ""
            if data.find(_UNIQ_KEY, start, end) >= 0:
                uniq_key = _property(data, _UNIQ_KEY, start, end)
            if topic == RMQ_SYS_SCHEDULE_TOPIC and delay_levels_ms:
                tags_code = store_ts + _delay_ms(data, start, end, delay_levels_ms)
    except UnicodeDecodeError:
        return _invalid("topic or properties are not UTF-8")
    return DispatchRequest(
        total,
        True,
        topic,
        queue_id,
        physical_offset,
        tags_code,
        store_ts,
        queue_offset,
        keys,
        uniq_key,
        sys_flag,
        prepared_offset,
    )


@dataclass(slots=True)
class ParsedRecords:
    """The records found in a window of the commit log."""

    requests: list[DispatchRequest]
    #: Bytes of valid records from the window's start.
    consumed: int
    #: The end-of-file blank record follows the consumed bytes.
    end_of_file: bool
    #: Why the record after the consumed bytes is invalid; empty if the window just ended.
    problem: str


def parse_records(
    view: memoryview,
    base_offset: int,
    *,
    check_crc: bool,
    delay_levels_ms: tuple[int, ...] = (),
    max_bytes: int = 1 << 20,
    max_record_size: int = 4 << 20,
) -> ParsedRecords:
    """Parse the records at the start of ``view`` (commit log bytes from ``base_offset`` to
    the readable end), stopping after about ``max_bytes``.

    The window is copied to ``bytes`` once, so fields are read without a copy per record. A
    record is valid only if its PHYSICALOFFSET says where it really is.
    """
    window = min(len(view), max_bytes + max_record_size)
    data = bytes(view[:window])
    requests: list[DispatchRequest] = []
    position = 0
    stop = min(len(data), max_bytes)
    while position < stop:
        request = check_message_and_return_size(data, position, check_crc, delay_levels_ms)
        size = request.msg_size
        if size > 0 and request.commit_log_offset == base_offset + position:
            requests.append(request)
            position += size
            continue
        if size == 0 and request.success:
            return ParsedRecords(requests, position, True, "")
        if size > 0:
            problem = (
                f"record at {base_offset + position} says its offset is {request.commit_log_offset}"
            )
        else:
            problem = request.problem
        return ParsedRecords(requests, position, False, problem)
    return ParsedRecords(requests, position, False, "")
