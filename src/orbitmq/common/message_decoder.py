"""RocketMQ's stored-message codec (``MessageDecoder``): records to and from ``MessageExt``,
property strings, and client batch bodies. Where each field sits is
``orbitmq.common.record_layout``'s. Properties are ``name\\x01value\\x02`` repeated, in UTF-8.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Mapping
from typing import Final

from orbitmq.common import message as message_model
from orbitmq.common import sys_flag as sf
from orbitmq.common.crc32 import crc32
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.message import Message, MessageExt, SocketAddress
from orbitmq.common.message_const import NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR
from orbitmq.common.message_id import create_message_id
from orbitmq.common.record_layout import (
    BATCH_ITEM_PREFIX,
    BORNHOST_POSITION,
    HOST_V6_FLAGS,
    MAX_PROPERTIES_LENGTH,
    MESSAGE_MAGIC_CODE,
    PHYSICALOFFSET_POSITION,
    PREFIX_SYSFLAG_INDEX,
    PROPERTIESLEN,
    RECORD_PREFIX,
    SYSFLAG_POSITION,
    TAIL_LENGTHS_SIZE,
    TOPICLEN,
    batch_items,
    born_host_length,
    calc_msg_length,
    record_prefix,
    store_host_length,
)
from orbitmq.common.socket_address import is_ipv6, pack_socket_address, unpack_socket_address
from orbitmq.common.topic import TOPIC_MAX_LENGTH

_SYSFLAG: Final = struct.Struct(">i")


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
    sys_flag = message.sys_flag & ~HOST_V6_FLAGS
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
    if len(topic) > TOPIC_MAX_LENGTH or len(properties) > MAX_PROPERTIES_LENGTH:
        raise MessageFormatError(
            f"topic of {len(topic)} bytes (limit {TOPIC_MAX_LENGTH}) or properties of "
            f"{len(properties)} bytes (limit {MAX_PROPERTIES_LENGTH}) do not fit a record"
        )
    born_len = born_host_length(sys_flag)
    store_len = store_host_length(sys_flag)
    if len(born_host) != born_len or len(store_host) != store_len:
        raise MessageFormatError(
            f"packed hosts of {len(born_host)} and {len(store_host)} bytes do not match "
            f"SYSFLAG {sys_flag:#x} ({born_len} and {store_len} expected)"
        )
    total = calc_msg_length(sys_flag, len(body), len(topic), len(properties))
    return b"".join(
        (
            record_prefix(sys_flag).pack(
                total,
                MESSAGE_MAGIC_CODE,
                crc32(body) if crc is None else crc,
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
            TOPICLEN.pack(len(topic)),
            topic,
            PROPERTIESLEN.pack(len(properties)),
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
    sys_flag = _SYSFLAG.unpack_from(view, position + SYSFLAG_POSITION)[0]
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
    if total < prefix.size + TAIL_LENGTHS_SIZE or position + total > len(view) or body_len < 0:
        raise MessageFormatError(f"total size {total} does not fit the {len(view)}-byte buffer")
    pos = position + prefix.size
    body_view = view[pos : pos + body_len]
    if check_crc and crc32(body_view) != crc:
        raise MessageFormatError(f"body CRC mismatch at physical offset {physical_offset}")
    pos += body_len
    topic_len = view[pos]
    pos += TOPICLEN.size
    topic = bytes(view[pos : pos + topic_len]).decode()
    pos += topic_len
    props_len = PROPERTIESLEN.unpack_from(view, pos)[0]
    pos += PROPERTIESLEN.size
    props = bytes(view[pos : pos + props_len]).decode()
    if pos + props_len != position + total:
        raise MessageFormatError(f"record fields end at {pos + props_len}, not {position + total}")
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


def _unpack_host(hosts: dict[bytes, SocketAddress], raw: bytes) -> SocketAddress:
    """``raw`` unpacked, and remembered in ``hosts``: a batch's records come from a few
    producers and one store."""
    host = hosts[raw] = unpack_socket_address(raw)
    return host


def _id_prefix(prefixes: dict[bytes, str], raw: bytes) -> str:
    """The host part of the offset message id of store host ``raw``, and remembered in
    ``prefixes`` (create_message_id's layout: the packed host in upper-case hex, then the
    offset as int64, which is the record's own PHYSICALOFFSET bytes)."""
    prefix = prefixes[raw] = raw.hex().upper()
    return prefix


def _decode_run(data: bytes, out: list[MessageExt], read_body: bool) -> int:
    """Append the well-formed records at the start of ``data`` to ``out``; returns where the
    first record not taken starts (``len(data)`` if none).

    The fast path of :func:`decode_messages`: fields sliced from the bytes, messages built
    positionally, what repeats from record to record (topic, hosts, message id prefix)
    computed once per batch, ASCII property strings parsed only if read. Anything unusual
    stops it without raising: the one decoder reports errors.
    """
    end, position = len(data), 0
    hosts: dict[bytes, SocketAddress] = {}
    id_prefixes: dict[bytes, str] = {}
    topic_raw, topic = b"", ""
    # IPv4 hosts are the rule: unpack with that layout, and again only if SYSFLAG says not.
    unpack_v4, size_v4 = RECORD_PREFIX[0].unpack_from, RECORD_PREFIX[0].size
    unpack_props_len = PROPERTIESLEN.unpack_from
    # The layout's names bound once: locals cost less than globals in a loop per record.
    magic_code, v6_flags, sys_flag_index = MESSAGE_MAGIC_CODE, HOST_V6_FLAGS, PREFIX_SYSFLAG_INDEX
    tail, props_len_size, topic_len_size = TAIL_LENGTHS_SIZE, PROPERTIESLEN.size, TOPICLEN.size
    id_offset_at, id_offset_end = PHYSICALOFFSET_POSITION, SYSFLAG_POSITION
    try:
        while end - position >= size_v4:
            fields = unpack_v4(data, position)
            prefix_size = size_v4
            if fields[sys_flag_index] & v6_flags:
                # Too few bytes for this layout raise struct.error: the record is declined.
                prefix = record_prefix(fields[sys_flag_index])
                fields, prefix_size = prefix.unpack_from(data, position), prefix.size
            # One unpack (slices would cost more than a tenth of the record's decoding).
            (total, magic, crc, queue_id, flag, queue_offset, physical_offset, sys_flag, born_ts,
             born_raw, store_ts, store_raw, reconsume, prepared, body_len) = fields  # fmt: skip
            body_at = position + prefix_size
            body_end = body_at + body_len
            record_end = position + total
            # The body and the two tail lengths inside the record, the record in the buffer.
            if magic != magic_code or not (body_at <= body_end <= record_end - tail <= end - tail):
                break
            topic_len = data[body_end]
            props_at = body_end + tail + topic_len
            props_len = unpack_props_len(data, props_at - props_len_size)[0]
            if props_len < 0 or props_at + props_len != record_end:
                break
            topic_at = body_end + topic_len_size
            if topic_len != len(topic_raw) or not data.startswith(topic_raw, topic_at):
                topic_raw = data[topic_at : topic_at + topic_len]
                topic = topic_raw.decode()
            properties_text = data[props_at:record_end]
            # ASCII properties (the usual) are parsed only if read; others are decoded now,
            # so that invalid UTF-8 is still reported here.
            lazy = properties_text.isascii()
            message = MessageExt(
                topic,
                data[body_at:body_end] if read_body else b"",
                flag,
                _PARSED_LATER if lazy else string_to_message_properties(properties_text.decode()),
                queue_id,
                total,
                queue_offset,
                sys_flag,
                born_ts,
                hosts.get(born_raw) or _unpack_host(hosts, born_raw),
                store_ts,
                hosts.get(store_raw) or _unpack_host(hosts, store_raw),
                (id_prefixes.get(store_raw) or _id_prefix(id_prefixes, store_raw))
                + data[position + id_offset_at : position + id_offset_end].hex().upper(),
                physical_offset,
                crc,
                reconsume,
                prepared,
            )
            if lazy:
                # MessageExt parses the text on the first read of the unset slot.
                del message.properties
                message._properties_text = properties_text
            out.append(message)
            position = record_end
    except (struct.error, ValueError, UnicodeDecodeError, IndexError):
        pass  # this record is left to decode_message, which reports it
    return position


# -- client batch encoding -------------------------------------------------------------


def encode_batch_message(message: Message) -> bytes:
    """One message as a client puts it into a batch body (``MessageDecoder.encodeMessage``)."""
    props = message_properties_to_string(message.properties).encode()
    if len(props) > MAX_PROPERTIES_LENGTH:
        raise MessageFormatError(
            f"properties of {len(props)} bytes exceed the limit {MAX_PROPERTIES_LENGTH}"
        )
    total = BATCH_ITEM_PREFIX.size + len(message.body) + PROPERTIESLEN.size + len(props)
    return b"".join(
        (
            BATCH_ITEM_PREFIX.pack(total, 0, 0, message.flag, len(message.body)),
            message.body,
            PROPERTIESLEN.pack(len(props)),
            props,
        )
    )


def encode_batch_messages(messages: Iterable[Message]) -> bytes:
    """A batch body: the messages' batch encodings back to back."""
    return b"".join(encode_batch_message(m) for m in messages)


def count_batch_messages(body: bytes | memoryview) -> int:
    """How many messages a batch body holds; raises MessageFormatError when it is
    malformed."""
    return sum(1 for _ in batch_items(memoryview(body)))


def decode_batch_messages(body: bytes | memoryview, topic: str = "") -> list[Message]:
    """The messages of a batch body; raises MessageFormatError when it is malformed."""
    view = memoryview(body)
    messages: list[Message] = []
    for flag, start, props_at, end in batch_items(view):
        try:
            props = bytes(view[props_at:end]).decode()
        except UnicodeDecodeError as exc:
            raise MessageFormatError(f"malformed batch properties at {props_at}: {exc}") from exc
        body_bytes = bytes(view[start : props_at - PROPERTIESLEN.size])
        messages.append(Message(topic, body_bytes, flag, string_to_message_properties(props)))
    return messages
