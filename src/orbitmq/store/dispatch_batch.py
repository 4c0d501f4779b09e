"""DispatchBatch: the records of a commit log window, parsed column by column.

Reput and recovery walk the log with ``parse_records`` (RocketMQ's
``checkMessageAndReturnSize``, applied to a whole window at once). Record boundaries are
found by the layout's walk over TOTALSIZE; the fixed fields of every record are then read
and validated in one pass (with numpy; with struct for a few records); only the variable
parts (topic, TAGS, KEYS, UNIQ_KEY) are picked out record by record, straight from one
``bytes`` copy of the window. The batch's columns are lists either way.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.crc32 import crc32
from orbitmq.common.java_hash import java_string_hash
from orbitmq.common.record_layout import (
    BODY_POSITION_V4,
    BODYCRC_POSITION,
    BODYLEN,
    HOST_V6_EXTRA,
    PHYSICALOFFSET_POSITION,
    PROPERTIESLEN,
    QUEUEID_POSITION,
    QUEUEOFFSET_POSITION,
    STORETIMESTAMP_POSITION_V4,
    SYSFLAG_POSITION,
    TAIL_LENGTHS_SIZE,
    TOPICLEN,
    TOTALSIZE_POSITION,
    gather,
    record_prefix,
    walk_records,
)
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC, RMQ_SYS_WHEEL_TIMER_TOPIC

_CACHE_LIMIT: Final = 65536
_TAGS: Final = mc.PROPERTY_TAGS.encode() + b"\x01"
_KEYS: Final = mc.PROPERTY_KEYS.encode() + b"\x01"
_UNIQ_KEY: Final = mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX.encode() + b"\x01"
_DELAY: Final = mc.PROPERTY_DELAY_TIME_LEVEL.encode() + b"\x01"
_TIMER_OUT_MS: Final = mc.PROPERTY_TIMER_OUT_MS.encode() + b"\x01"
_TAGS_LEN: Final = len(_TAGS)
_UNIQ_KEY_LEN: Final = len(_UNIQ_KEY)

_tags_codes: dict[bytes, int] = {}
_topics: dict[bytes, str] = {}


@dataclass(slots=True)
class DispatchBatch:
    """Consecutive valid records, one entry per record in every column, in log order.
    Used by the thread that parsed it (its grouping by queue is cached unlocked).

    Columns are lists, not arrays: most rounds hold a few records, and every numpy call
    on a tiny array costs more than the Python loop it would replace."""

    commit_log_offsets: list[int]
    sizes: list[int]
    queue_ids: list[int]
    queue_offsets: list[int]
    store_timestamps: list[int]
    sys_flags: list[int]
    #: Consume-queue tag code: Java hashCode of TAGS (0 without), or for
    #: SCHEDULE_TOPIC_XXXX and rmq_sys_wheel_timer the delivery time.
    tags_codes: list[int]
    topics: list[str]
    #: Raw KEYS values (space-separated keys), None when absent.
    keys: list[bytes | None]
    uniq_keys: list[bytes | None]
    #: ``queue_rows``' answer once asked: the consume-queue dispatcher and the arrival
    #: notice both want it, and the columns do not change after parsing.
    _queue_rows: dict[tuple[str, int], list[int]] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def __len__(self) -> int:
        return len(self.topics)

    def visible(self) -> list[bool]:
        """Records consumers may see: plain and committed; not prepared or rolled back."""
        # One bit tells them apart: prepared (01) and rolled back (11) have the low bit of the
        # transaction type set, plain (00) and committed (10) do not.
        return [not flags & sf.TRANSACTION_PREPARED_TYPE for flags in self.sys_flags]

    def queue_rows(self) -> dict[tuple[str, int], list[int]]:
        """The rows of the visible records of each (topic, queue id), in log order; queues
        in the order of their first visible record. Worked out once per batch."""
        rows = self._queue_rows
        if rows is None:
            keys = zip(self.topics, self.queue_ids, strict=True)
            # Most rounds hold no transaction half: a look at the round's few distinct flag
            # values spares the per-record loop the visibility test.
            if any(flags & sf.TRANSACTION_PREPARED_TYPE for flags in set(self.sys_flags)):
                rows = {}
                for row, (key, seen) in enumerate(zip(keys, self.visible(), strict=True)):
                    if seen:
                        rows.setdefault(key, []).append(row)
            else:
                rows = _group_rows(keys)
            self._queue_rows = rows
        return rows


def _group_rows(keys: Iterator[tuple[str, int]]) -> dict[tuple[str, int], list[int]]:
    """Row numbers by key (the hot loop: one dict lookup and one append a record)."""
    rows: dict[tuple[str, int], list[int]] = {}
    get = rows.get
    for row, key in enumerate(keys):
        group = get(key)
        if group is None:
            rows[key] = [row]
        else:
            group.append(row)
    return rows


@dataclass(slots=True)
class ParsedRecords:
    """What a window of the commit log holds."""

    batch: DispatchBatch
    #: Bytes of valid records from the window's start.
    consumed: int
    #: The end-of-file blank record follows the consumed bytes.
    end_of_file: bool
    #: Why the bytes after the consumed ones are not a record; empty if the window ended.
    problem: str
    #: The problem is a record whose rest is not written yet: a slave's log between two
    #: frames of its master (a frame ends where its batch size does, not at a record).
    incomplete: bool = False


#: Rounds with fewer records than this read their fields with struct, not numpy: a single
#: send's round would otherwise pay numpy's per-call overhead dozens of times.
_SCALAR_BELOW: Final = 8
_INT: Final = struct.Struct(">i")
_LONG: Final = struct.Struct(">q")


def _check_fields(
    data: bytes, starts: list[int], base_offset: int, check_crc: bool
) -> tuple[int, str, dict[str, list[int]]]:
    """Validate every record's lengths, offset and CRC; (valid count, problem, columns)."""
    if len(starts) < _SCALAR_BELOW:
        columns, ok = _fields_scalar(data, starts, base_offset)
    else:
        columns, ok = _fields_vector(data, starts, base_offset)
    count = ok.index(False) if False in ok else len(ok)
    problem = ""
    if count < len(starts):
        at = base_offset + starts[count]
        problem = f"record at {at} has inconsistent fields"
        said = columns["commit_log_offsets"][count]
        if said != at:
            problem = f"record at {at} says its offset is {said}"
    if check_crc:
        view = memoryview(data)
        read_int = _INT.unpack_from
        for i, (start, flags, topic_at) in enumerate(
            zip(
                starts[:count],
                columns["sys_flags"][:count],
                columns["topic_at"][:count],
                strict=True,
            )
        ):
            # A valid record's body runs from the end of its prefix to its topic.
            body = view[start + record_prefix(flags).size : topic_at]
            if crc32(body) != read_int(data, start + BODYCRC_POSITION)[0]:
                count, problem = i, f"body CRC mismatch at physical offset {base_offset + start}"
                break
    return count, problem, columns


#: The fixed-field columns of a round, in the order both field readers produce them; the
#: first six are DispatchBatch columns.
_FIELDS: Final = (
    "sizes",
    "sys_flags",
    "commit_log_offsets",
    "queue_ids",
    "queue_offsets",
    "store_timestamps",
    "topic_at",
    "topic_len",
    "props_len",
)


def _fields_vector(
    data: bytes, starts: list[int], base_offset: int
) -> tuple[dict[str, list[int]], list[bool]]:
    """The fixed fields of many records, read with numpy; and whether each is consistent."""
    raw = np.frombuffer(data, np.uint8)
    at = np.array(starts, np.int64)
    totals = gather(raw, at + TOTALSIZE_POSITION, ">i4")
    flags = gather(raw, at + SYSFLAG_POSITION, ">i4")
    born_extra = np.where(flags & sf.BORNHOST_V6_FLAG, HOST_V6_EXTRA, 0)
    store_extra = np.where(flags & sf.STOREHOSTADDRESS_V6_FLAG, HOST_V6_EXTRA, 0)
    prefix = BODY_POSITION_V4 + born_extra + store_extra
    body_at = at + prefix
    body_len = gather(raw, body_at - BODYLEN.size, ">i4")
    topic_at = body_at + np.clip(body_len, 0, None)
    topic_len = raw[np.minimum(topic_at, len(raw) - 1)].astype(np.int64)
    props_len = gather(raw, topic_at + TOPICLEN.size + topic_len, ">i2")
    offsets = gather(raw, at + PHYSICALOFFSET_POSITION, ">i8")
    ok = (body_len >= 0) & (prefix + body_len + TAIL_LENGTHS_SIZE <= totals) & (props_len >= 0)
    ok &= topic_at + TAIL_LENGTHS_SIZE + topic_len + props_len == at + totals
    ok &= offsets == base_offset + at
    values = (
        totals,
        flags,
        offsets,
        gather(raw, at + QUEUEID_POSITION, ">i4"),
        gather(raw, at + QUEUEOFFSET_POSITION, ">i8"),
        gather(raw, at + STORETIMESTAMP_POSITION_V4 + born_extra, ">i8"),
        topic_at,
        topic_len,
        props_len,
    )
    return {name: v.tolist() for name, v in zip(_FIELDS, values, strict=True)}, ok.tolist()


def _fields_scalar(
    data: bytes, starts: list[int], base_offset: int
) -> tuple[dict[str, list[int]], list[bool]]:
    """``_fields_vector`` for a few records, read with struct: a single send's round would
    otherwise pay numpy's per-call overhead dozens of times."""
    rows: list[tuple[int, ...]] = []
    ok: list[bool] = []
    size = len(data)
    read_int = _INT.unpack_from
    read_long = _LONG.unpack_from
    read_props_len = PROPERTIESLEN.unpack_from
    for start in starts:
        # walk_records checked that each record's TOTALSIZE bytes, at least MIN_RECORD_SIZE,
        # are inside ``data``, and so the fields up to STORETIMESTAMP (with both hosts IPv6);
        # but fields past the IPv4 prefix may not be when the host flags are wrong.
        total = read_int(data, start + TOTALSIZE_POSITION)[0]
        flags = read_int(data, start + SYSFLAG_POSITION)[0]
        # Inline, not record_prefix(): a call per field would cost more than the reads.
        born_extra = HOST_V6_EXTRA if flags & sf.BORNHOST_V6_FLAG else 0
        store_extra = HOST_V6_EXTRA if flags & sf.STOREHOSTADDRESS_V6_FLAG else 0
        prefix = BODY_POSITION_V4 + born_extra + store_extra
        body_at = start + prefix
        body_len = read_int(data, body_at - BODYLEN.size)[0] if body_at <= size else -1
        topic_at = body_at + max(body_len, 0)
        topic_len = data[topic_at] if topic_at < size else 0
        props_at = topic_at + TOPICLEN.size + topic_len
        props_len = (
            read_props_len(data, props_at)[0] if props_at + PROPERTIESLEN.size <= size else -1
        )
        offset = read_long(data, start + PHYSICALOFFSET_POSITION)[0]
        rows.append(
            (
                total,
                flags,
                offset,
                read_int(data, start + QUEUEID_POSITION)[0],
                read_long(data, start + QUEUEOFFSET_POSITION)[0],
                read_long(data, start + STORETIMESTAMP_POSITION_V4 + born_extra)[0],
                topic_at,
                topic_len,
                props_len,
            )
        )
        ok.append(
            body_len >= 0
            and prefix + body_len + TAIL_LENGTHS_SIZE <= total
            and props_len >= 0
            and topic_at + TAIL_LENGTHS_SIZE + topic_len + props_len == start + total
            and offset == base_offset + start
        )
    columns = (
        [list(column) for column in zip(*rows, strict=True)] if rows else [[] for _ in _FIELDS]
    )
    return dict(zip(_FIELDS, columns, strict=True)), ok


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

    A record is valid when its magic code, lengths and PHYSICALOFFSET agree (and its body
    CRC, with ``check_crc``); parsing stops at the first that is not.
    """
    window = view[: min(len(view), max_bytes + max_record_size)]
    whole_view = len(window) == len(view)
    walk = walk_records(window, min(len(window), max_bytes))
    starts, end, problem, end_of_file = walk.starts, walk.end, walk.problem, walk.end_of_file
    # One copy of the records found, not of the whole window: the window reaches a record's
    # length past max_bytes only so that the last record can end there.
    data = bytes(window[:end])
    window.release()
    count, field_problem, columns = _check_fields(data, starts, base_offset, check_crc)
    if count < len(starts):
        end, problem, end_of_file = starts[count], field_problem, False
        columns = {name: column[:count] for name, column in columns.items()}
    batch = _columns(data, columns, delay_levels_ms)
    incomplete = walk.overrun > 0 and whole_view and count == len(starts)
    return ParsedRecords(batch, end, end_of_file, problem, incomplete)


def _columns(
    data: bytes, columns: dict[str, list[int]], delay_levels_ms: tuple[int, ...]
) -> DispatchBatch:
    topics: list[str] = []
    keys: list[bytes | None] = []
    uniq_keys: list[bytes | None] = []
    tags_codes: list[int] = []
    find = data.find
    topic_len_size, tail = TOPICLEN.size, TAIL_LENGTHS_SIZE  # locals: read once per record
    # The hottest loop of dispatch: a find() that misses costs no call, and most records
    # lack KEYS; only present properties go through _property.
    for topic_pos, t_len, p_len in zip(
        columns["topic_at"], columns["topic_len"], columns["props_len"], strict=True
    ):
        raw_topic = data[topic_pos + topic_len_size : topic_pos + topic_len_size + t_len]
        topic = _topics.get(raw_topic)
        if topic is None:
            topic = _cache_topic(raw_topic)
        topics.append(topic)
        start = topic_pos + tail + t_len
        end = start + p_len
        at = find(_TAGS, start, end)
        if at < 0:
            tags_codes.append(0)
        else:
            if at == start or data[at - 1] == 2:
                value_end = find(b"\x02", at + _TAGS_LEN, end)
                tags = data[at + _TAGS_LEN : value_end if value_end >= 0 else end]
            else:
                tags = _property(data, _TAGS, start, end) or b""
            tags_codes.append(_tags_code(tags) if tags else 0)
        at = find(_UNIQ_KEY, start, end)
        if at < 0:
            uniq_keys.append(None)
        elif at == start or data[at - 1] == 2:
            value_end = find(b"\x02", at + _UNIQ_KEY_LEN, end)
            uniq_keys.append(data[at + _UNIQ_KEY_LEN : value_end if value_end >= 0 else end])
        else:
            uniq_keys.append(_property(data, _UNIQ_KEY, start, end))
        keys.append(_property(data, _KEYS, start, end) if find(_KEYS, start, end) >= 0 else None)
    if delay_levels_ms and RMQ_SYS_SCHEDULE_TOPIC in topics:
        _schedule_tags_codes(data, topics, columns, tags_codes, delay_levels_ms)
    if RMQ_SYS_WHEEL_TIMER_TOPIC in topics:
        _timer_tags_codes(data, topics, columns, tags_codes)
    return DispatchBatch(
        commit_log_offsets=columns["commit_log_offsets"],
        sizes=columns["sizes"],
        queue_ids=columns["queue_ids"],
        queue_offsets=columns["queue_offsets"],
        store_timestamps=columns["store_timestamps"],
        sys_flags=columns["sys_flags"],
        tags_codes=tags_codes,
        topics=topics,
        keys=keys,
        uniq_keys=uniq_keys,
    )


def _schedule_tags_codes(
    data: bytes,
    topics: list[str],
    columns: dict[str, list[int]],
    codes: list[int],
    delay_levels_ms: tuple[int, ...],
) -> None:
    """SCHEDULE_TOPIC_XXXX records carry their delivery time as tag code, as RocketMQ's
    schedule service expects."""
    for i, topic in enumerate(topics):
        if topic != RMQ_SYS_SCHEDULE_TOPIC:
            continue
        start = columns["topic_at"][i] + TAIL_LENGTHS_SIZE + columns["topic_len"][i]
        raw = _property(data, _DELAY, start, start + columns["props_len"][i])
        level = int(raw) if raw and raw.isdigit() else 1
        level = min(max(level, 1), len(delay_levels_ms))
        codes[i] = columns["store_timestamps"][i] + delay_levels_ms[level - 1]


def _timer_tags_codes(
    data: bytes, topics: list[str], columns: dict[str, list[int]], codes: list[int]
) -> None:
    """rmq_sys_wheel_timer records carry their due time (TIMER_OUT_MS) as tag code, so the
    timer store files them without reading the message (RocketMQ reads each one)."""
    for i, topic in enumerate(topics):
        if topic != RMQ_SYS_WHEEL_TIMER_TOPIC:
            continue
        start = columns["topic_at"][i] + TAIL_LENGTHS_SIZE + columns["topic_len"][i]
        raw = _property(data, _TIMER_OUT_MS, start, start + columns["props_len"][i])
        codes[i] = int(raw) if raw and raw.isdigit() else columns["store_timestamps"][i]


def _cache_topic(raw: bytes) -> str:
    topic = raw.decode()
    if len(_topics) >= _CACHE_LIMIT:
        _topics.clear()
    _topics[raw] = topic
    return topic


def _tags_code(tags: bytes) -> int:
    code = _tags_codes.get(tags)
    if code is None:
        code = java_string_hash(tags.decode())
        if len(_tags_codes) >= _CACHE_LIMIT:
            _tags_codes.clear()
        _tags_codes[tags] = code
    return code


def _property(data: bytes, name: bytes, start: int, end: int) -> bytes | None:
    """The raw value of property ``name`` (given with its trailing \\x01) in the property
    string at ``data[start:end]``, found without parsing the others."""
    at = data.find(name, start, end)
    while at > start and data[at - 1] != 2:
        at = data.find(name, at + 1, end)
    if at < 0:
        return None
    value_at = at + len(name)
    value_end = data.find(b"\x02", value_at, end)
    return data[value_at : value_end if value_end >= 0 else end]
