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
_SYSFLAG: Final = struct.Struct(">i")
_PROPS_LEN: Final = struct.Struct(">h")
_CACHE_LIMIT: Final = 65536

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


def _invalid(problem: str) -> DispatchRequest:
    return DispatchRequest(-1, False, problem=problem)


def check_message_and_return_size(
    data: memoryview,
    position: int,
    check_crc: bool,
    delay_levels_ms: tuple[int, ...] = (),
) -> DispatchRequest:
    """Parse the record starting at ``position`` of ``data``.

    ``data`` ends where readable bytes end (the wrote position); a record running past it is
    invalid. ``delay_levels_ms`` lets SCHEDULE_TOPIC_XXXX records carry their delivery time
    as tag code, as RocketMQ's schedule service expects.
    """
    remaining = len(data) - position
    if remaining < 8:
        return DispatchRequest(0, True) if remaining == 0 else _invalid("truncated record head")
    total, magic = _HEAD.unpack_from(data, position)
    if magic == BLANK_MAGIC_CODE:
        return DispatchRequest(0, True)
    if magic != MESSAGE_MAGIC_CODE:
        return _invalid(f"illegal magic code {magic & 0xFFFFFFFF:#010x}")
    if remaining < 40:
        return _invalid("truncated record head")
    sys_flag = _SYSFLAG.unpack_from(data, position + 36)[0]
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
    raw_topic = bytes(data[pos + 1 : pos + 1 + topic_len])
    pos += 1 + topic_len
    props_len = _PROPS_LEN.unpack_from(data, pos)[0]
    if pos + 2 + props_len != position + total:
        return _invalid(f"record fields add up to {pos + 2 + props_len - position}, not {total}")
    topic = _topics.get(raw_topic)
    try:
        if topic is None:
            topic = raw_topic.decode()
            if len(_topics) >= _CACHE_LIMIT:
                _topics.clear()
            _topics[raw_topic] = topic
        props = bytes(data[pos + 2 : pos + 2 + props_len]).decode() if props_len else ""
    except UnicodeDecodeError:
        return _invalid("topic or properties are not UTF-8")
    tags_code = 0
    keys = ""
    uniq_key = None
    if props:
        properties = dict(p.split("\x01", 1) for p in props.split("\x02") if "\x01" in p)
        tags = properties.get(mc.PROPERTY_TAGS)
        if tags:
            tags_code = tags_string_to_tags_code(tags)
        keys = properties.get(mc.PROPERTY_KEYS, "")
        uniq_key = properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        if topic == RMQ_SYS_SCHEDULE_TOPIC and delay_levels_ms:
            level = int(properties.get(mc.PROPERTY_DELAY_TIME_LEVEL, "0") or 0)
            level = min(max(level, 1), len(delay_levels_ms))
            tags_code = store_ts + delay_levels_ms[level - 1]
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
