"""RocketMQ 4.x's stored-record layout (``MessageDecoder``, ``CommitLog``): where every field
of a record sits, the magic codes, the layout of a client batch's items, the numpy gathers
that read one field of many records at once, and the walk over record starts.

Every module that reads or writes records (the codec, the commit log, dispatch, the Spark
reader) takes positions from here. A stored record, all integers big-endian::

    TOTALSIZE int32 | MAGICCODE int32 (0xDAA320A7) | BODYCRC int32 | QUEUEID int32 |
    FLAG int32 | QUEUEOFFSET int64 | PHYSICALOFFSET int64 | SYSFLAG int32 |
    BORNTIMESTAMP int64 | BORNHOST (4 or 16 bytes of IP, int32 port) | STORETIMESTAMP int64 |
    STOREHOST (4 or 16 bytes of IP, int32 port) | RECONSUMETIMES int32 |
    PREPAREDTRANSACTIONOFFSET int64 | BODYLEN int32 | BODY | TOPICLEN int8 | TOPIC |
    PROPERTIESLEN int16 | PROPERTIES

The host fields are 20 bytes instead of 8 when SYSFLAG has BORNHOST_V6_FLAG /
STOREHOSTADDRESS_V6_FLAG, which moves every later field. Everything here is constants and
pure functions: safe from any thread.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final, NamedTuple

import numpy as np
import numpy.typing as npt

from orbitmq.common import sys_flag as sf
from orbitmq.common.errors import MessageFormatError

MESSAGE_MAGIC_CODE: Final = -626843481  # 0xDAA320A7 as a signed int32
BLANK_MAGIC_CODE: Final = -875286124  # 0xCBD43194 as a signed int32
#: The smallest end-of-file blank record: TOTALSIZE and MAGICCODE.
END_FILE_MIN_BLANK_LENGTH: Final = 8
MAX_PROPERTIES_LENGTH: Final = 32767

#: Byte offsets of the fixed fields every record has at the same place.
TOTALSIZE_POSITION: Final = 0
MAGICCODE_POSITION: Final = 4
BODYCRC_POSITION: Final = 8
QUEUEID_POSITION: Final = 12
FLAG_POSITION: Final = 16
QUEUEOFFSET_POSITION: Final = 20
PHYSICALOFFSET_POSITION: Final = 28
SYSFLAG_POSITION: Final = 36
BORNTIMESTAMP_POSITION: Final = 40
BORNHOST_POSITION: Final = 48

#: A packed host: 4 bytes of IPv4 address and the port as int32, or 16 bytes of IPv6 and
#: the port.
HOST_V4_LENGTH: Final = 8
HOST_V6_LENGTH: Final = 20
HOST_V6_EXTRA: Final = HOST_V6_LENGTH - HOST_V4_LENGTH
#: The SYSFLAG bits that make the born host and the store host IPv6.
HOST_V6_FLAGS: Final = sf.BORNHOST_V6_FLAG | sf.STOREHOSTADDRESS_V6_FLAG

#: Offsets of the fields after BORNHOST when both hosts are IPv4; an IPv6 born host moves
#: them all HOST_V6_EXTRA bytes on, an IPv6 store host those after STOREHOST too.
STORETIMESTAMP_POSITION_V4: Final = BORNHOST_POSITION + HOST_V4_LENGTH
STOREHOST_POSITION_V4: Final = STORETIMESTAMP_POSITION_V4 + 8
RECONSUMETIMES_POSITION_V4: Final = STOREHOST_POSITION_V4 + HOST_V4_LENGTH
PREPAREDTRANSACTIONOFFSET_POSITION_V4: Final = RECONSUMETIMES_POSITION_V4 + 4
BODYLEN_POSITION_V4: Final = PREPAREDTRANSACTIONOFFSET_POSITION_V4 + 8
BODY_POSITION_V4: Final = BODYLEN_POSITION_V4 + 4

#: BODYLEN, the prefix's last field: the body starts right after it.
BODYLEN: Final = struct.Struct(">i")
#: The lengths that frame the variable tail: TOPICLEN (int8) and PROPERTIESLEN (int16).
TOPICLEN: Final = struct.Struct(">B")
PROPERTIESLEN: Final = struct.Struct(">h")
#: Bytes of a record besides its prefix and its body, topic and properties.
TAIL_LENGTHS_SIZE: Final = TOPICLEN.size + PROPERTIESLEN.size
#: The smallest record: an all-IPv4 prefix, an empty body, topic and properties.
MIN_RECORD_SIZE: Final = BODY_POSITION_V4 + TAIL_LENGTHS_SIZE

#: TOTALSIZE and MAGICCODE, the head every record and blank record starts with.
RECORD_HEAD: Final = struct.Struct(">ii")


def born_host_length(sys_flag: int) -> int:
    return HOST_V6_LENGTH if sys_flag & sf.BORNHOST_V6_FLAG else HOST_V4_LENGTH


def store_host_length(sys_flag: int) -> int:
    return HOST_V6_LENGTH if sys_flag & sf.STOREHOSTADDRESS_V6_FLAG else HOST_V4_LENGTH


def store_timestamp_position(sys_flag: int) -> int:
    return BORNHOST_POSITION + born_host_length(sys_flag)


def _record_struct(born_host_len: int, store_host_len: int) -> struct.Struct:
    # Everything from TOTALSIZE to BODYLEN in one pack: the hot path makes one call per record.
    return struct.Struct(f">iiiiiqqiq{born_host_len}sq{store_host_len}siqi")


#: Record prefix layouts, indexed by (born host is IPv6) * 2 + (store host is IPv6).
RECORD_PREFIX: Final = (
    _record_struct(HOST_V4_LENGTH, HOST_V4_LENGTH),
    _record_struct(HOST_V4_LENGTH, HOST_V6_LENGTH),
    _record_struct(HOST_V6_LENGTH, HOST_V4_LENGTH),
    _record_struct(HOST_V6_LENGTH, HOST_V6_LENGTH),
)
#: Where SYSFLAG is in a tuple unpacked with a RECORD_PREFIX layout.
PREFIX_SYSFLAG_INDEX: Final = 7


def record_prefix(sys_flag: int) -> struct.Struct:
    """The fixed-prefix layout (TOTALSIZE..BODYLEN) of a record with this SYSFLAG."""
    born_v6 = 1 if sys_flag & sf.BORNHOST_V6_FLAG else 0
    store_v6 = 1 if sys_flag & sf.STOREHOSTADDRESS_V6_FLAG else 0
    return RECORD_PREFIX[born_v6 * 2 + store_v6]


def calc_msg_length(sys_flag: int, body_length: int, topic_length: int, props_length: int) -> int:
    """Total size of a stored record (RocketMQ's ``calMsgLength``)."""
    return (
        record_prefix(sys_flag).size + body_length + topic_length + props_length + TAIL_LENGTHS_SIZE
    )


#: The fixed prefix (TOTALSIZE..BODYLEN) of a record whose hosts are both IPv4, as a numpy
#: record: the prefixes of many records read as one array.
PREFIX_V4_DTYPE: Final = np.dtype(
    [
        ("total", ">i4"),
        ("magic", ">i4"),
        ("body_crc", ">i4"),
        ("queue_id", ">i4"),
        ("flag", ">i4"),
        ("queue_offset", ">i8"),
        ("physical_offset", ">i8"),
        ("sys_flag", ">i4"),
        ("born_ts", ">i8"),
        ("born_host", f"V{HOST_V4_LENGTH}"),
        ("store_ts", ">i8"),
        ("store_host", f"V{HOST_V4_LENGTH}"),
        ("reconsume", ">i4"),
        ("prepared", ">i8"),
        ("body_len", ">i4"),
    ]
)


def windows(
    data: npt.NDArray[np.uint8], positions: npt.NDArray[np.int64], width: int
) -> npt.NDArray[np.uint8]:
    """The ``width`` bytes at each of ``positions``, a row each (one gather of rows of a
    sliding-window view: no index per byte). A position whose bytes would run past the end
    reads the last ``width`` bytes instead: callers validate what they read."""
    if not len(positions) or len(data) < width:
        return np.zeros((len(positions), width), np.uint8)
    rows = np.lib.stride_tricks.sliding_window_view(data, width)
    picked: npt.NDArray[np.uint8] = rows[np.minimum(positions, len(data) - width)]
    return picked


def gather(
    data: npt.NDArray[np.uint8], positions: npt.NDArray[np.int64], dtype: str
) -> npt.NDArray[np.int64]:
    """The big-endian integers of ``dtype`` (``">i4"``, ...) at ``positions`` of ``data``,
    as int64. A byte past the end reads as the last byte: callers validate what they read.

    An index per byte rather than ``windows``: making the sliding view costs about 9 us a
    call, more than the whole gather of a dispatch round's few dozen records."""
    width = np.dtype(dtype).itemsize
    index = np.minimum(positions[:, None] + np.arange(width), len(data) - 1)
    picked = np.ascontiguousarray(data[index])
    return np.ravel(picked.view(dtype)).astype(np.int64)


class RecordWalk(NamedTuple):
    """Where the records at the start of some bytes begin, found by TOTALSIZE (a tuple:
    cheap to make, and dispatch walks on every round)."""

    starts: list[int]
    #: Where the walk stopped: after the last record, or at what is not one.
    end: int
    #: Why the bytes at ``end`` are not a record; empty when the walk reached its stop or
    #: an end-of-file blank record.
    problem: str
    #: The bytes at ``end`` are an end-of-file blank record.
    end_of_file: bool
    #: How many bytes the record at ``end`` would run past the end (0 unless that is the
    #: problem).
    overrun: int = 0


def walk_records(data: bytes | bytearray | memoryview, stop: int) -> RecordWalk:
    """Record starts up to ``stop``: each record must have the message magic code, at least
    MIN_RECORD_SIZE bytes and all of them inside ``data``. Only this walk cannot be
    vectorised: each record's size says where the next starts."""
    # The hot loop (every pulled and dispatched record) makes one combined check per record
    # with names bound once; _stopped_walk says what stopped it.
    starts: list[int] = []
    append = starts.append
    head = RECORD_HEAD.unpack_from
    head_size = RECORD_HEAD.size
    magic_code = MESSAGE_MAGIC_CODE
    min_size = MIN_RECORD_SIZE
    position = 0
    size = len(data)
    while position < stop:
        if size - position < head_size:
            problem = f"a record at {position} is cut short"
            return RecordWalk(starts, position, problem, False, head_size - (size - position))
        total, magic = head(data, position)
        if magic != magic_code or total < min_size or position + total > size:
            return _stopped_walk(starts, position, total, magic, size)
        append(position)
        position += total
    return RecordWalk(starts, position, "", False)


def _stopped_walk(
    starts: list[int], position: int, total: int, magic: int, size: int
) -> RecordWalk:
    """The walk's end at a record that is not a whole stored message: a blank (end of
    file) or a problem."""
    if magic != MESSAGE_MAGIC_CODE:
        if magic == BLANK_MAGIC_CODE:
            return RecordWalk(starts, position, "", True)
        problem = f"illegal magic code {magic & 0xFFFFFFFF:#010x} at {position}"
        return RecordWalk(starts, position, problem, False)
    if total < MIN_RECORD_SIZE:
        problem = f"a record at {position} has size {total}, less than {MIN_RECORD_SIZE}"
        return RecordWalk(starts, position, problem, False)
    over = position + total - size
    problem = f"total size {total} at {position} runs {over} bytes past the readable end"
    return RecordWalk(starts, position, problem, False, over)


# -- client batch bodies -------------------------------------------------------------------

#: A message inside a batch body: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN; then BODY,
#: PROPERTIESLEN int16, PROPERTIES.
BATCH_ITEM_PREFIX: Final = struct.Struct(">iiiii")


def batch_items(view: memoryview) -> Iterator[tuple[int, int, int, int]]:
    """Each item of a batch body: (flag, body start, properties start, end); raises
    MessageFormatError at the first item whose lengths do not fit. The body ends
    PROPERTIESLEN's size before the properties start."""
    # Names bound once: the commit log's batch encoder runs this for every stored item.
    position = 0
    length = len(view)
    unpack_item = BATCH_ITEM_PREFIX.unpack_from
    unpack_props_len = PROPERTIESLEN.unpack_from
    item_prefix_size = BATCH_ITEM_PREFIX.size
    props_len_size = PROPERTIESLEN.size
    try:
        while position < length:
            total, _magic, _crc, flag, body_len = unpack_item(view, position)
            props_len_at = position + item_prefix_size + body_len
            props_len = unpack_props_len(view, props_len_at)[0]
            props_at = props_len_at + props_len_size
            end = props_at + props_len
            if body_len < 0 or props_len < 0 or end != position + total or end > length:
                raise MessageFormatError(f"batch item at byte {position} has inconsistent lengths")
            yield flag, position + item_prefix_size, props_at, end
            position = end
    except struct.error as exc:
        raise MessageFormatError(f"malformed batch body at {position}: {exc}") from exc
