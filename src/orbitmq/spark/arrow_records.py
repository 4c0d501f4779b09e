"""Pull answers straight into Arrow: the stored records of a pull become the source's record
batch column by column, with no message object per row.

Fixed fields are gathered for all records at once with numpy (each record's field positions
follow from its SYSFLAG: IPv6 hosts are 12 bytes longer); bodies and property strings become
Arrow binary views over the pulled bytes, copied out in one gather each; property strings are
split into the ``properties`` map, and ``tags``, ``keys`` and ``msgId`` looked up in it, by
Arrow's compute kernels. Only finding where each record starts walks the records one by one.
The layout is RocketMQ's stored record (``orbitmq.common.record_layout``).
"""

from __future__ import annotations

import zlib
from typing import Any, Final

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.message_id import create_message_id
from orbitmq.common.record_layout import (
    BODY_POSITION_V4,
    BODYLEN_POSITION_V4,
    HOST_V4_LENGTH,
    HOST_V6_EXTRA,
    HOST_V6_FLAGS,
    PHYSICALOFFSET_POSITION,
    PREFIX_V4_DTYPE,
    PROPERTIESLEN,
    RECONSUMETIMES_POSITION_V4,
    STOREHOST_POSITION_V4,
    STORETIMESTAMP_POSITION_V4,
    SYSFLAG_POSITION,
    TAIL_LENGTHS_SIZE,
    gather,
    walk_records,
    windows,
)
from orbitmq.spark.schema import ARROW_SCHEMA

#: A pull answer's stored records, or several answers' back to back.
Records = bytes | bytearray | memoryview
_INT32: Final = pa.int32()
_TIMESTAMP: Final = ARROW_SCHEMA.field("storeTimestamp").type
_KEYS_TYPE: Final = ARROW_SCHEMA.field("keys").type
_PROPERTY_SEPARATOR: Final = ord(mc.PROPERTY_SEPARATOR)
_NAME_VALUE_SEPARATOR: Final = ord(mc.NAME_VALUE_SEPARATOR)
#: A binary view: length, then 12 bytes inline (short values) or a 4-byte prefix, the
#: buffer index and the offset (Arrow's BinaryView layout, little-endian).
_VIEW: Final = np.dtype([("length", "<i4"), ("prefix", "V4"), ("buffer", "<i4"), ("offset", "<i4")])
_INLINE_MAX: Final = 12


def _record_starts(data: Records) -> list[int]:
    """Where each record begins; raises MessageFormatError unless the answer is records
    back to back up to its end."""
    walk = walk_records(data, len(data))
    if walk.overrun:
        raise MessageFormatError(f"the last record runs {walk.overrun} bytes past the answer")
    if walk.problem:
        raise MessageFormatError(walk.problem)
    if walk.end_of_file:
        raise MessageFormatError(f"a pull answer holds a blank record's magic code at {walk.end}")
    return walk.starts


def _pieces(
    strings: Any, sep: int
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64], npt.NDArray[np.int64], Any]:
    """Each string of ``strings`` cut at every ``sep`` byte, empty pieces dropped: the
    strings' bytes, the pieces' starts and ends in them, and the string each is of. A
    piece starts after a separator or at a string's start, and ends before a separator or
    at a string's end."""
    n = len(strings)
    _validity, offsets_buffer, data_buffer = strings.buffers()
    bounds = np.frombuffer(offsets_buffer, np.int32)[strings.offset : strings.offset + n + 1]
    # Only the strings' bytes (a buffer may run on past them), from the first string's.
    text = np.frombuffer(data_buffer, np.uint8)[bounds[0] : bounds[-1]]
    bounds = bounds.astype(np.int64) - bounds[0]
    length = len(text)
    cut = text == sep
    edge = np.zeros(length + 1, bool)
    edge[bounds] = True
    # after[p]: byte p-1 is cut (or p is 0); before[p]: byte p is cut (or p is the end).
    after = np.empty(length + 1, bool)
    after[0] = True
    after[1:] = cut
    before = np.empty(length + 1, bool)
    before[:length] = cut
    before[length] = True
    starts = np.flatnonzero(~before & (after | edge))
    ends = np.flatnonzero(~after & (before | edge))
    return text, starts, ends, np.searchsorted(bounds, starts, "right") - 1


def _substrings(
    text: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    present: npt.NDArray[np.bool_] | None = None,
) -> Any:
    """The ranges of ``text`` as one string array (null where ``present`` is False), copied
    in one gather. ``text`` is valid UTF-8 and the ranges are cut at ASCII separators, so
    the pieces are valid too."""
    n = len(starts)
    lengths = ends - starts
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(lengths, out=offsets[1:])
    chars = text[np.repeat(starts - offsets[:-1], lengths) + np.arange(int(offsets[-1]))]
    if present is None or present.all():
        return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(chars))
    validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    nulls = n - int(np.count_nonzero(present))
    return pa.StringArray.from_buffers(
        n, pa.py_buffer(offsets), pa.py_buffer(chars), validity, nulls
    )


class _Properties:
    """Property strings cut into name-value pairs by scanning their bytes, as RocketMQ's
    string2messageProperties reads them (pieces between ``\x02``, each a name before its
    first ``\x01`` and a value after it; a piece without one, or with an empty name, is
    skipped): the ``properties`` map column, and single properties of every row at once."""

    def __init__(self, texts: Any) -> None:
        n = len(texts)
        text, starts, ends, rows = _pieces(texts, _PROPERTY_SEPARATOR)
        ones = np.flatnonzero(text == _NAME_VALUE_SEPARATOR)
        first = np.searchsorted(ones, starts)
        sep = ones[np.minimum(first, len(ones) - 1)] if len(ones) else starts
        named = (first < len(ones)) & (sep > starts) & (sep < ends)
        self._n = n
        self._text = text
        self._rows = rows[named]
        self._value_starts, self._value_ends = sep[named] + 1, ends[named]
        self.names = _substrings(text, starts[named], sep[named])
        values = _substrings(text, self._value_starts, self._value_ends)
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(np.bincount(self._rows, minlength=n), out=offsets[1:])
        self.map = pa.MapArray.from_arrays(pa.array(offsets, _INT32), self.names, values)

    def lookup(self, name: str) -> Any:
        """Each row's value of property ``name`` (its last, as a property dict keeps it), or
        null."""
        hits = np.flatnonzero(pc.equal(self.names, name).to_numpy(zero_copy_only=False))
        where = np.full(self._n, -1, np.int64)
        np.maximum.at(where, self._rows[hits], hits)
        present = where >= 0
        picked = where[present]
        starts = np.zeros(self._n, np.int64)
        ends = np.zeros(self._n, np.int64)
        starts[present] = self._value_starts[picked]
        ends[present] = self._value_ends[picked]
        return _substrings(self._text, starts, ends, present)

    def split(self, name: str, sep: str) -> Any:
        """Each row's value of ``name`` cut at ``sep``, empty pieces dropped, as a list
        column (an empty list where the row has no such property)."""
        text, piece_starts, piece_ends, rows = _pieces(self.lookup(name), ord(sep))
        offsets = np.zeros(self._n + 1, np.int32)
        np.cumsum(np.bincount(rows, minlength=self._n), out=offsets[1:])
        pieces = _substrings(text, piece_starts, piece_ends)
        return pa.ListArray.from_arrays(pa.array(offsets, _INT32), pieces, type=_KEYS_TYPE)


def _views(
    data: Records, raw: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], ends: Any
) -> Any:
    """The byte ranges ``[starts, ends)`` of ``data`` as a binary view array over it: no
    copy yet, one gather when it is cast."""
    n = len(starts)
    lengths = (ends - starts).astype(np.int32)
    views = np.zeros(n, _VIEW)
    views["length"] = lengths
    views["offset"] = starts
    # The first twelve bytes of every value, zeroed past the end of a short one (positions
    # past the answer's end are clamped, not padded: no copy of the whole answer).
    positions = np.minimum(starts[:, None] + np.arange(_INLINE_MAX), len(raw) - 1)
    head = raw[positions]
    head[np.arange(_INLINE_MAX) >= lengths[:, None]] = 0
    cells = views.view(np.uint8).reshape(n, _VIEW.itemsize)
    cells[:, 4:8] = head[:, :4]
    short = lengths <= _INLINE_MAX
    if short.any():
        # Arrow keeps values of up to 12 bytes inside the view itself.
        cells[short, 4:16] = head[short]
    return pa.BinaryViewArray.from_buffers(
        pa.binary_view(), n, [None, pa.py_buffer(views), pa.py_buffer(data)]
    )


def _strings(
    data: Records, raw: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64], ends: Any
) -> Any:
    """The byte ranges of ``data`` as one string array, checked to be UTF-8."""
    try:
        return _views(data, raw, starts, ends).cast(pa.string())
    except pa.ArrowInvalid as exc:
        raise MessageFormatError(f"a property string is not valid UTF-8: {exc}") from None


def _prefixes(raw: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64]) -> dict[str, Any]:
    """Every record's fixed fields, as arrays by name; IPv6 hosts move the later ones."""
    prefix = windows(raw, starts, PREFIX_V4_DTYPE.itemsize).view(PREFIX_V4_DTYPE).ravel()
    sys_flag = prefix["sys_flag"]
    v6 = sys_flag & HOST_V6_FLAGS
    fields = {name: prefix[name] for name in ("total", "queue_offset", "born_ts")}
    fields["sys_flag"] = sys_flag
    if not v6.any():
        fields["born_extra"] = fields["store_extra"] = np.zeros(len(starts), np.int64)
        for name in ("store_ts", "reconsume", "body_len"):
            fields[name] = prefix[name]
        return fields
    born_extra = np.where(sys_flag & sf.BORNHOST_V6_FLAG, HOST_V6_EXTRA, 0)
    store_extra = born_extra + np.where(sys_flag & sf.STOREHOSTADDRESS_V6_FLAG, HOST_V6_EXTRA, 0)
    fields["born_extra"], fields["store_extra"] = born_extra, store_extra
    fields["store_ts"] = gather(raw, starts + STORETIMESTAMP_POSITION_V4 + born_extra, ">i8")
    fields["reconsume"] = gather(raw, starts + RECONSUMETIMES_POSITION_V4 + store_extra, ">i4")
    fields["body_len"] = gather(raw, starts + BODYLEN_POSITION_V4 + store_extra, ">i4")
    return fields


def records_to_batch(
    data: Records,
    topic: str,
    broker_name: str,
    queue_id: int,
    *,
    end_offset: int,
    tags_set: frozenset[str] | None = None,
) -> Any:
    """The source's record batch for the stored records of one pull answer, keeping those
    with queue offset below ``end_offset`` whose tag is in ``tags_set`` (None: any tag; the
    broker matched hash codes only, this is the client's re-check of the strings)."""
    starts = np.array(_record_starts(data), np.int64)
    n = len(starts)
    raw = np.frombuffer(data, np.uint8)
    fields = _prefixes(raw, starts)
    sys_flag = fields["sys_flag"]
    body_start = starts + BODY_POSITION_V4 + fields["store_extra"]
    body_end = body_start + fields["body_len"]
    record_end = starts + fields["total"]
    if (body_end + TAIL_LENGTHS_SIZE > record_end).any():
        raise MessageFormatError("a record's body runs past the record")
    topic_len = raw[body_end].astype(np.int64)
    props_start = body_end + TAIL_LENGTHS_SIZE + topic_len
    props_len = gather(raw, props_start - PROPERTIESLEN.size, ">i2")
    if (props_start + props_len != record_end).any():
        raise MessageFormatError("a record's properties do not end the record")

    if (sys_flag & sf.COMPRESSED_FLAG).any():
        compressed = (sys_flag & sf.COMPRESSED_FLAG).astype(bool).tolist()
        pieces = [
            zlib.decompress(data[a:b]) if z else data[a:b]
            for a, b, z in zip(body_start.tolist(), body_end.tolist(), compressed, strict=True)
        ]
        bodies = pa.array(pieces, pa.binary())
    else:
        bodies = _views(data, raw, body_start, body_end).cast(pa.binary())

    properties = _Properties(_strings(data, raw, props_start, record_end))
    tags = properties.lookup(mc.PROPERTY_TAGS)
    keys = properties.split(mc.PROPERTY_KEYS, mc.KEY_SEPARATOR)
    msg_ids = properties.lookup(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if msg_ids.null_count:
        msg_ids = _fill_offset_ids(
            msg_ids, data, starts, fields["born_extra"], fields["store_extra"]
        )

    columns = [
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.repeat(pa.scalar(broker_name, pa.string()), n),
        pa.array(np.full(n, queue_id, np.int32)),
        pa.array(fields["queue_offset"].astype(np.int64)),
        msg_ids,
        tags,
        keys,
        properties.map,
        bodies,
        pa.array(fields["born_ts"].astype(np.int64) * 1000, _TIMESTAMP),
        pa.array(fields["store_ts"].astype(np.int64) * 1000, _TIMESTAMP),
        pa.array(fields["reconsume"].astype(np.int32)),
    ]
    batch = pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
    keep = pa.array(fields["queue_offset"] < end_offset)
    if tags_set is not None:
        keep = pc.and_(keep, pc.fill_null(pc.is_in(tags, pa.array(sorted(tags_set))), False))
    if not pc.all(keep).as_py():
        batch = batch.filter(keep)
    return batch


def _fill_offset_ids(
    msg_ids: Any,
    data: Records,
    starts: npt.NDArray[np.int64],
    born_extra: npt.NDArray[np.int64],
    store_extra: npt.NDArray[np.int64],
) -> Any:
    """Rows without UNIQ_KEY take the offset message id (store host + commit log offset),
    as RocketMQ's MessageClientExt.getMsgId does."""
    ids = msg_ids.to_pylist()
    for i, value in enumerate(ids):
        if value is None:
            host_at = int(starts[i]) + STOREHOST_POSITION_V4 + int(born_extra[i])
            host_len = HOST_V4_LENGTH + int(store_extra[i] - born_extra[i])
            # PHYSICALOFFSET, the int64 that ends where SYSFLAG starts.
            offset_bytes = data[starts[i] + PHYSICALOFFSET_POSITION : starts[i] + SYSFLAG_POSITION]
            offset = int.from_bytes(offset_bytes, "big", signed=True)
            ids[i] = create_message_id(bytes(data[host_at : host_at + host_len]), offset)
    return pa.array(ids, pa.string())
