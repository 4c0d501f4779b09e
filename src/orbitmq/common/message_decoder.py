"""RocketMQ's stored-message byte layout (``MessageDecoder``), property strings and batches.

A stored record, all integers big-endian::

    TOTALSIZE int32 | MAGICCODE int32 (0xDAA320A7) | BODYCRC int32 | QUEUEID int32 |
    FLAG int32 | QUEUEOFFSET int64 | PHYSICALOFFSET int64 | SYSFLAG int32 |
    BORNTIMESTAMP int64 | BORNHOST (4 or 16 bytes of IP, int32 port) | STORETIMESTAMP int64 |
    STOREHOST (4 or 16 bytes of IP, int32 port) | RECONSUMETIMES int32 |
    PREPAREDTRANSACTIONOFFSET int64 | BODYLEN int32 | BODY | TOPICLEN int8 | TOPIC |
    PROPERTIESLEN int16 | PROPERTIES

The host fields are 20 bytes instead of 8 when SYSFLAG has BORNHOST_V6_FLAG /
STOREHOSTADDRESS_V6_FLAG. Properties are ``name\\x01value\\x02`` repeated, in UTF-8.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Final

from orbitmq.common import message as message_model
from orbitmq.common import sys_flag as sf
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.message import Message, MessageExt, SocketAddress
from orbitmq.common.message_const import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from orbitmq.common.message_id import create_message_id
from orbitmq.common.socket_address import is_ipv6, pack_socket_address, unpack_socket_address

MESSAGE_MAGIC_CODE: Final = -626843481  # 0xDAA320A7 as a signed int32
BLANK_MAGIC_CODE: Final = -875286124  # 0xCBD43194 as a signed int32
#: The smallest end-of-file blank record: TOTALSIZE and MAGICCODE.
END_FILE_MIN_BLANK_LENGTH: Final = 8
MAX_PROPERTIES_LENGTH: Final = 32767
MAX_TOPIC_LENGTH: Final = 127

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

_INT: Final = struct.Struct(">i")
_SHORT: Final = struct.Struct(">h")
_BYTE: Final = struct.Struct(">B")


def _record_struct(born_host_len: int, store_host_len: int) -> struct.Struct:
    # Everything from TOTALSIZE to BODYLEN in one pack: the hot path makes one call per record.
    return struct.Struct(f">iiiiiqqiq{born_host_len}sq{store_host_len}siqi")


#: Record prefix layouts, indexed by (born host is IPv6) * 2 + (store host is IPv6).
RECORD_PREFIX: Final = (
    _record_struct(8, 8),
    _record_struct(8, 20),
    _record_struct(20, 8),
    _record_struct(20, 20),
)


def record_prefix(sys_flag: int) -> struct.Struct:
    """The fixed-prefix layout (TOTALSIZE..BODYLEN) of a record with this SYSFLAG."""
    born_v6 = 1 if sys_flag & sf.BORNHOST_V6_FLAG else 0
    store_v6 = 1 if sys_flag & sf.STOREHOSTADDRESS_V6_FLAG else 0
    return RECORD_PREFIX[born_v6 * 2 + store_v6]


def calc_msg_length(sys_flag: int, body_length: int, topic_length: int, props_length: int) -> int:
    """Total size of a stored record (RocketMQ's ``calMsgLength``)."""
    return record_prefix(sys_flag).size + body_length + 1 + topic_length + 2 + props_length


def body_crc(body: bytes | bytearray | memoryview) -> int:
    """The BODYCRC RocketMQ stores: CRC-32 (zlib) of the body, masked to 31 bits."""
    return zlib.crc32(body) & 0x7FFFFFFF


# -- properties ------------------------------------------------------------------------


def message_properties_to_string(properties: Mapping[str, str]) -> str:
    """``name\\x01value\\x02`` for every property, as RocketMQ writes them."""
    return "".join(
        f"{name}{NAME_VALUE_SEPARATOR}{value}{PROPERTY_SEPARATOR}"
        for name, value in properties.items()
    )


#: Parse a property string (defined beside MessageExt, which parses its own on demand).
string_to_message_properties: Final = message_model.string_to_message_properties


# -- stored records --------------------------------------------------------------------


def encode_message(message: MessageExt, properties_string: str | None = None) -> bytes:
    """The stored record of ``message``, as the CommitLog writes it.

    ``commit_log_offset``, ``queue_offset`` and ``store_timestamp`` are taken as they are; the
    body CRC is computed here. IPv6 flags in ``sys_flag`` follow the hosts.
    """
    if properties_string is None:
        properties_string = message_properties_to_string(message.properties)
    sys_flag = message.sys_flag & ~(sf.BORNHOST_V6_FLAG | sf.STOREHOSTADDRESS_V6_FLAG)
    if is_ipv6(message.born_host):
        sys_flag |= sf.BORNHOST_V6_FLAG
    if is_ipv6(message.store_host):
        sys_flag |= sf.STOREHOSTADDRESS_V6_FLAG
    return pack_record(
        sys_flag=sys_flag,
        body=message.body,
        topic=message.topic.encode(),
        properties=properties_string.encode(),
        queue_id=message.queue_id,
        flag=message.flag,
        queue_offset=message.queue_offset,
        physical_offset=message.commit_log_offset,
        born_timestamp=message.born_timestamp,
        born_host=pack_socket_address(message.born_host),
        store_timestamp=message.store_timestamp,
        store_host=pack_socket_address(message.store_host),
        reconsume_times=message.reconsume_times,
        prepared_transaction_offset=message.prepared_transaction_offset,
    )


def pack_record(
    *,
    sys_flag: int,
    body: bytes | memoryview,
    topic: bytes,
    properties: bytes,
    queue_id: int,
    flag: int,
    queue_offset: int,
    physical_offset: int,
    born_timestamp: int,
    born_host: bytes,
    store_timestamp: int,
    store_host: bytes,
    reconsume_times: int,
    prepared_transaction_offset: int,
    crc: int | None = None,
) -> bytes:
    """One stored record from its fields; hosts already packed, the CRC computed if None.

    The host lengths must agree with the IPv6 bits of ``sys_flag``.
    """
    if len(topic) > MAX_TOPIC_LENGTH or len(properties) > MAX_PROPERTIES_LENGTH:
        raise MessageFormatError(
            f"topic of {len(topic)} bytes (limit {MAX_TOPIC_LENGTH}) or properties of "
            f"{len(properties)} bytes (limit {MAX_PROPERTIES_LENGTH}) do not fit a record"
        )
    born_len = 20 if sys_flag & sf.BORNHOST_V6_FLAG else 8
    store_len = 20 if sys_flag & sf.STOREHOSTADDRESS_V6_FLAG else 8
    if len(born_host) != born_len or len(store_host) != store_len:
        raise MessageFormatError(
            f"packed hosts of {len(born_host)} and {len(store_host)} bytes do not match "
            f"SYSFLAG {sys_flag:#x} ({born_len} and {store_len} expected)"
        )
    prefix = record_prefix(sys_flag)
    total = prefix.size + len(body) + 1 + len(topic) + 2 + len(properties)
    return b"".join(
        (
            prefix.pack(
                total,
                MESSAGE_MAGIC_CODE,
                body_crc(body) if crc is None else crc,
                queue_id,
                flag,
                queue_offset,
                physical_offset,
                sys_flag,
                born_timestamp,
                born_host,
                store_timestamp,
                store_host,
                reconsume_times,
                prepared_transaction_offset,
                len(body),
            ),
            body,
            _BYTE.pack(len(topic)),
            topic,
            _SHORT.pack(len(properties)),
            properties,
        )
    )


def decode_message(
    data: bytes | bytearray | memoryview,
    position: int = 0,
    *,
    read_body: bool = True,
    check_crc: bool = False,
) -> MessageExt:
    """Decode the record at ``position``; raises MessageFormatError when it is not one.

    The body is returned as stored (still compressed when SYSFLAG says so); ``msg_id`` is the
    offset message id built from the store host and the physical offset.
    """
    view = memoryview(data)
    try:
        return _decode(view, position, read_body, check_crc)
    except (struct.error, ValueError, UnicodeDecodeError, IndexError) as exc:
        raise MessageFormatError(f"malformed message record at position {position}: {exc}") from exc


def _decode(view: memoryview, position: int, read_body: bool, check_crc: bool) -> MessageExt:
    if len(view) - position < BORNHOST_POSITION:
        raise MessageFormatError(f"{len(view) - position} bytes at {position} are too few")
    sys_flag = _INT.unpack_from(view, position + SYSFLAG_POSITION)[0]
    prefix = record_prefix(sys_flag)
    (
        total,
        magic,
        crc,
        queue_id,
        flag,
        queue_offset,
        physical_offset,
        sys_flag,
        born_ts,
        born_host,
        store_ts,
        store_host,
        reconsume_times,
        prepared_offset,
        body_len,
    ) = prefix.unpack_from(view, position)
    if magic != MESSAGE_MAGIC_CODE:
        raise MessageFormatError(f"magic code {magic & 0xFFFFFFFF:#010x} is not a message's")
    if total < prefix.size + 3 or position + total > len(view) or body_len < 0:
        raise MessageFormatError(f"total size {total} does not fit the {len(view)}-byte buffer")
    pos = position + prefix.size
    body_view = view[pos : pos + body_len]
    if check_crc and body_crc(body_view) != crc:
        raise MessageFormatError(f"body CRC mismatch at physical offset {physical_offset}")
    pos += body_len
    topic_len = view[pos]
    topic = bytes(view[pos + 1 : pos + 1 + topic_len]).decode()
    pos += 1 + topic_len
    props_len = _SHORT.unpack_from(view, pos)[0]
    props = bytes(view[pos + 2 : pos + 2 + props_len]).decode()
    if pos + 2 + props_len != position + total:
        raise MessageFormatError(
            f"record fields end at {pos + 2 + props_len}, not {position + total}"
        )
    return MessageExt(
        topic=topic,
        body=bytes(body_view) if read_body else b"",
        flag=flag,
        properties=string_to_message_properties(props),
        queue_id=queue_id,
        store_size=total,
        queue_offset=queue_offset,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=unpack_socket_address(born_host),
        store_timestamp=store_ts,
        store_host=unpack_socket_address(store_host),
        msg_id=create_message_id(store_host, physical_offset),
        commit_log_offset=physical_offset,
        body_crc=crc,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared_offset,
    )


def decode_messages(
    data: bytes | bytearray | memoryview, *, read_body: bool = True
) -> list[MessageExt]:
    """Every record in ``data`` back to back (a pull response body, a commit log slice).

    The messages equal what :func:`decode_message` gives record by record, and a malformed
    record raises the same MessageFormatError.
    """
    # The batch decoder slices bytes; other buffers are copied once (their bodies would be).
    buffer = data if type(data) is bytes else bytes(data)
    messages: list[MessageExt] = []
    # The batch decoder takes the well-formed records; the first record it declines (if any)
    # is decoded again by decode_message, which raises the precise error or decodes it.
    position = _decode_run(buffer, messages, read_body) if _POSITIONAL_MESSAGE_EXT else 0
    view = memoryview(buffer)
    while position < len(view):
        message = decode_message(view, position, read_body=read_body)
        messages.append(message)
        position += message.store_size
    return messages


#: MessageExt's fields in the order its generated ``__init__`` takes them positionally, and
#: the property string it parses on demand (not an ``__init__`` argument).
_MESSAGE_EXT_FIELDS: Final = (
    "topic",
    "body",
    "flag",
    "properties",
    "queue_id",
    "store_size",
    "queue_offset",
    "sys_flag",
    "born_timestamp",
    "born_host",
    "store_timestamp",
    "store_host",
    "msg_id",
    "commit_log_offset",
    "body_crc",
    "reconsume_times",
    "prepared_transaction_offset",
    "_properties_text",
)
#: A placeholder for the properties a batch-decoded message gets as text (see _decode_run).
_PARSED_LATER: Final[dict[str, str]] = {}
#: Positional construction is about 2.5x cheaper than by keyword; should the dataclass ever
#: change its fields, the batch decoder stands aside rather than fill the wrong ones.
_POSITIONAL_MESSAGE_EXT: Final = (
    tuple(f.name for f in dataclasses.fields(MessageExt)) == _MESSAGE_EXT_FIELDS
)


def _decode_run(data: bytes, out: list[MessageExt], read_body: bool) -> int:
    """Append the records of ``data`` to ``out`` from the start, as long as they are
    well-formed; returns the position of the first record not taken (``len(data)`` if all).

    The per-batch fast path of :func:`decode_messages` (a pull answer holds hundreds of
    records): fields are sliced from the bytes directly rather than through memoryviews,
    the message is built positionally, and what repeats from record to record -- the topic,
    the unpacked hosts, the host part of the message id -- is computed once per batch, and
    an ASCII property string is left to the message to parse if anyone reads it. Anything
    unusual stops it without raising, so errors are reported by the one decoder.
    """
    end = len(data)
    position = 0
    hosts: dict[bytes, SocketAddress] = {}
    id_prefixes: dict[bytes, str] = {}
    topic_raw = b""
    topic = ""
    v6_mask = sf.BORNHOST_V6_FLAG | sf.STOREHOSTADDRESS_V6_FLAG
    # IPv4 hosts are the rule: unpack with that layout, and again only if SYSFLAG says not.
    unpack_v4 = RECORD_PREFIX[0].unpack_from
    size_v4 = RECORD_PREFIX[0].size
    unpack_short = _SHORT.unpack_from
    parse_properties = string_to_message_properties
    new_message = MessageExt
    append = out.append
    try:
        while end - position >= size_v4:
            fields = unpack_v4(data, position)
            if fields[7] & v6_mask:
                prefix = record_prefix(fields[7])
                if end - position < prefix.size:
                    break
                fields = prefix.unpack_from(data, position)
                pos = position + prefix.size
            else:
                pos = position + size_v4
            (
                total,
                magic,
                crc,
                queue_id,
                flag,
                queue_offset,
                physical_offset,
                sys_flag,
                born_ts,
                born_raw,
                store_ts,
                store_raw,
                reconsume_times,
                prepared_offset,
                body_len,
            ) = fields
            record_end = position + total
            body_end = pos + body_len
            # The body, the topic length byte and the properties length all inside the
            # record, and the record inside the buffer.
            if magic != MESSAGE_MAGIC_CODE or not pos <= body_end <= record_end - 3 <= end - 3:
                break
            topic_len = data[body_end]
            props_at = body_end + 3 + topic_len
            props_len = unpack_short(data, props_at - 2)[0]
            if props_len < 0 or props_at + props_len != record_end:
                break
            if topic_len != len(topic_raw) or not data.startswith(topic_raw, body_end + 1):
                topic_raw = data[body_end + 1 : body_end + 1 + topic_len]
                topic = topic_raw.decode()
            properties_text = data[props_at:record_end]
            # An ASCII property string (the usual) is kept as it is and parsed only when
            # someone reads ``properties``; any other is decoded now, so that invalid UTF-8
            # is still reported here.
            lazy = properties_text.isascii()
            born_host = hosts.get(born_raw)
            if born_host is None:
                born_host = hosts[born_raw] = unpack_socket_address(born_raw)
            store_host = hosts.get(store_raw)
            if store_host is None:
                store_host = hosts[store_raw] = unpack_socket_address(store_raw)
            id_prefix = id_prefixes.get(store_raw)
            if id_prefix is None:
                id_prefix = id_prefixes[store_raw] = store_raw.hex().upper()
            message = new_message(
                topic,
                data[pos:body_end] if read_body else b"",
                flag,
                _PARSED_LATER if lazy else parse_properties(properties_text.decode()),
                queue_id,
                total,
                queue_offset,
                sys_flag,
                born_ts,
                born_host,
                store_ts,
                store_host,
                # create_message_id's layout: packed store host, then the offset as
                # int64 -- which is the record's own PHYSICALOFFSET bytes.
                id_prefix
                + data[position + PHYSICALOFFSET_POSITION : position + SYSFLAG_POSITION]
                .hex()
                .upper(),
                physical_offset,
                crc,
                reconsume_times,
                prepared_offset,
            )
            if lazy:
                # MessageExt parses the text on the first read of the unset slot.
                del message.properties
                message._properties_text = properties_text
            append(message)
            position = record_end
    except (struct.error, ValueError, UnicodeDecodeError, IndexError):
        pass  # this record is left to decode_message, which reports it
    return position


# -- client batch encoding -------------------------------------------------------------

#: A message inside a batch body: TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN.
BATCH_ITEM_PREFIX: Final = struct.Struct(">iiiii")


def encode_batch_message(message: Message) -> bytes:
    """One message as a client puts it into a batch body (``MessageDecoder.encodeMessage``)."""
    props = message_properties_to_string(message.properties).encode()
    if len(props) > MAX_PROPERTIES_LENGTH:
        raise MessageFormatError(
            f"properties of {len(props)} bytes exceed the limit {MAX_PROPERTIES_LENGTH}"
        )
    total = BATCH_ITEM_PREFIX.size + len(message.body) + 2 + len(props)
    return b"".join(
        (
            BATCH_ITEM_PREFIX.pack(total, 0, 0, message.flag, len(message.body)),
            message.body,
            _SHORT.pack(len(props)),
            props,
        )
    )


def encode_batch_messages(messages: Iterable[Message]) -> bytes:
    """A batch body: the messages' batch encodings back to back."""
    return b"".join(encode_batch_message(m) for m in messages)


def _batch_items(view: memoryview) -> Iterator[tuple[int, int, int, int]]:
    """Each item of a batch body: (flag, body start, properties start, end); raises
    MessageFormatError at the first item whose lengths do not fit."""
    position = 0
    try:
        while position < len(view):
            total, _magic, _crc, flag, body_len = BATCH_ITEM_PREFIX.unpack_from(view, position)
            start = position + BATCH_ITEM_PREFIX.size
            props_at = start + body_len
            props_len = _SHORT.unpack_from(view, props_at)[0]
            end = props_at + 2 + props_len
            if body_len < 0 or props_len < 0 or end != position + total or end > len(view):
                raise MessageFormatError(f"batch item at {position} has inconsistent lengths")
            yield flag, start, props_at + 2, end
            position = end
    except struct.error as exc:
        raise MessageFormatError(f"malformed batch body at {position}: {exc}") from exc


def count_batch_messages(body: bytes | memoryview) -> int:
    """How many messages a batch body holds; raises MessageFormatError when it is
    malformed."""
    return sum(1 for _ in _batch_items(memoryview(body)))


def decode_batch_messages(body: bytes | memoryview, topic: str = "") -> list[Message]:
    """The messages of a batch body; raises MessageFormatError when it is malformed."""
    view = memoryview(body)
    messages: list[Message] = []
    for flag, start, props_at, end in _batch_items(view):
        try:
            props = bytes(view[props_at:end]).decode()
        except UnicodeDecodeError as exc:
            raise MessageFormatError(f"malformed batch properties at {props_at}: {exc}") from exc
        body_bytes = bytes(view[start : props_at - 2])
        messages.append(Message(topic, body_bytes, flag, string_to_message_properties(props)))
    return messages
