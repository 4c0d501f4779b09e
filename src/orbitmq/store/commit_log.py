"""CommitLog: the one sequential log of every message a broker stores (R12).

Records have RocketMQ's layout (``orbitmq.common.message_decoder``). A record never spans two
files: when one does not fit, the rest of the file gets an end-of-file blank record
(TOTALSIZE = bytes left, MAGICCODE 0xCBD43194) and the record goes to the next file.
"""

from __future__ import annotations

import logging
import struct
import threading
import time
from dataclasses import dataclass
from typing import Final
from zlib import crc32

from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.clock import Clock
from orbitmq.common.message import MessageExtBatch, MessageExtBrokerInner, SocketAddress
from orbitmq.common.message_decoder import (
    BATCH_ITEM_PREFIX,
    BLANK_MAGIC_CODE,
    END_FILE_MIN_BLANK_LENGTH,
    MAX_PROPERTIES_LENGTH,
    MESSAGE_MAGIC_CODE,
    message_properties_to_string,
    record_prefix,
)
from orbitmq.common.message_id import create_message_id
from orbitmq.common.socket_address import is_ipv6, pack_socket_address
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC, topic_problem
from orbitmq.store.file_system import FileSystem
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.mapped_file_queue import MappedFileQueue
from orbitmq.store.message_store_config import MessageStoreConfig
from orbitmq.store.put_message_result import (
    AppendMessageResult,
    AppendMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)

log = logging.getLogger(__name__)

_BLANK: Final = struct.Struct(">ii")
_OFFSETS: Final = struct.Struct(">qq")  # QUEUEOFFSET, PHYSICALOFFSET: adjacent at 20
_TIMESTAMP: Final = struct.Struct(">q")
_SHORT: Final = struct.Struct(">h")
_QUEUE_OFFSET_POSITION: Final = 20
_UNCHECKED: Final = "?"


@dataclass(slots=True)
class EncodedRecords:
    """Records encoded outside the put lock; offsets and store time are patched inside it."""

    data: bytes
    #: Start of each record within ``data``.
    starts: list[int]
    store_timestamp_position: int
    topic: str
    queue_id: int
    sys_flag: int


def _failure(status: PutMessageStatus, remark: str) -> PutMessageResult:
    return PutMessageResult(status, None, remark)


class CommitLog:
    """Owns the commit log files, the next queue offset of every queue, and the put lock.

    ``append`` is safe from several threads (it takes the put lock); reads are lock-free.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        fs: FileSystem,
        clock: Clock,
        store_host: SocketAddress,
        delay_levels_ms: tuple[int, ...],
    ):
        self.config = config
        self.mapped_file_queue = MappedFileQueue(
            config.commit_log_dir,
            config.mapped_file_size_commit_log,
            fs,
            zero_run_limit=config.max_message_size + 4096,
        )
        self._clock = clock
        self.store_host: SocketAddress = store_host
        self.store_host_bytes = b""
        self._store_host_flag = 0
        self.set_store_host(store_host)
        self._delay_levels_ms = delay_levels_ms
        #: "topic-queueId" -> the queue offset the next message of that queue gets.
        self.topic_queue_table: dict[str, int] = {}
        self._put_lock = threading.Lock()
        self._born_hosts: dict[SocketAddress, tuple[bytes, int]] = {}
        #: Topic name -> why it is invalid (None: valid); names repeat, regexes are slow.
        self._topic_problems: dict[str, str | None] = {}
        #: Wall time (ms) at which the current holder took the put lock; 0 when free.
        self.begin_time_in_lock = 0

    def set_store_host(self, store_host: SocketAddress) -> None:
        """The address written into records from now on (a broker that bound port 0 learns
        its port only at start)."""
        self.store_host = store_host
        self.store_host_bytes = pack_socket_address(store_host)
        self._store_host_flag = sf.STOREHOSTADDRESS_V6_FLAG if is_ipv6(store_host) else 0

    # -- encoding (outside the lock) ----------------------------------------------------

    def _check_common(self, topic: str, props_len: int) -> PutMessageResult | None:
        problem = self._topic_problems.get(topic, _UNCHECKED)
        if problem is _UNCHECKED:
            problem = topic_problem(topic)
            if len(self._topic_problems) >= 65536:
                self._topic_problems.clear()
            self._topic_problems[topic] = problem
        if problem is not None:
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL, problem)
        if props_len > MAX_PROPERTIES_LENGTH:
            return _failure(
                PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                f"properties are {props_len} bytes, more than the limit {MAX_PROPERTIES_LENGTH}",
            )
        return None

    def _apply_delay_level(self, msg: MessageExtBrokerInner) -> None:
        """Move a delayed message into SCHEDULE_TOPIC_XXXX, queue level - 1 (R33)."""
        level = msg.delay_time_level
        if level <= 0 or not self._delay_levels_ms:
            return
        if sf.transaction_value(msg.sys_flag) not in (
            sf.TRANSACTION_NOT_TYPE,
            sf.TRANSACTION_COMMIT_TYPE,
        ):
            return
        level = min(level, len(self._delay_levels_ms))
        msg.delay_time_level = level
        msg.properties[mc.PROPERTY_REAL_TOPIC] = msg.topic
        msg.properties[mc.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        msg.topic = RMQ_SYS_SCHEDULE_TOPIC
        msg.queue_id = level - 1
        msg.properties_string = ""

    def _born_host(self, msg: MessageExtBrokerInner) -> tuple[bytes, int]:
        """The packed born host and its SYSFLAG bit; producers are few, so it is cached."""
        packed = self._born_hosts.get(msg.born_host)
        if packed is None:
            if len(self._born_hosts) >= 4096:
                self._born_hosts.clear()
            flag = sf.BORNHOST_V6_FLAG if is_ipv6(msg.born_host) else 0
            packed = self._born_hosts[msg.born_host] = (pack_socket_address(msg.born_host), flag)
        return packed

    def encode_message(
        self, msg: MessageExtBrokerInner
    ) -> tuple[EncodedRecords | None, PutMessageResult | None]:
        """Encode one message; (None, failure) when it cannot be stored."""
        self._apply_delay_level(msg)
        props_text = msg.properties_string or message_properties_to_string(msg.properties)
        props = props_text.encode()
        failure = self._check_common(msg.topic, len(props))
        if failure is not None:
            return None, failure
        born_host, born_flag = self._born_host(msg)
        sys_flag = (
            (msg.sys_flag & ~(sf.BORNHOST_V6_FLAG | sf.STOREHOSTADDRESS_V6_FLAG))
            | born_flag
            | self._store_host_flag
        )
        topic = msg.topic.encode()
        prefix = record_prefix(sys_flag)
        size = prefix.size + len(msg.body) + 1 + len(topic) + 2 + len(props)
        if size > self.config.max_message_size:
            return None, _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"message of {size} bytes (body {len(msg.body)}) exceeds maxMessageSize "
                f"{self.config.max_message_size}",
            )
        body = msg.body
        data = b"".join(
            (
                # Offsets and store time are filled in under the put lock.
                prefix.pack(
                    size,
                    MESSAGE_MAGIC_CODE,
                    crc32(body) & 0x7FFFFFFF,
                    msg.queue_id,
                    msg.flag,
                    0,
                    0,
                    sys_flag,
                    msg.born_timestamp,
                    born_host,
                    0,
                    self.store_host_bytes,
                    msg.reconsume_times,
                    msg.prepared_transaction_offset,
                    len(body),
                ),
                body,
                bytes((len(topic),)),
                topic,
                _SHORT.pack(len(props)),
                props,
            )
        )
        return EncodedRecords(
            data, [0], 48 + len(born_host), msg.topic, msg.queue_id, sys_flag
        ), None

    def encode_batch(
        self, batch: MessageExtBatch
    ) -> tuple[EncodedRecords | None, PutMessageResult | None]:
        """Encode every message of a client batch body into stored records.

        The batch's own properties are appended to each message's, as RocketMQ does.
        """
        if batch.delay_time_level > 0 or sf.transaction_value(batch.sys_flag):
            return None, _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                "a batch cannot hold delayed or transactional messages",
            )
        batch_props = (
            batch.properties_string or message_properties_to_string(batch.properties)
        ).encode()
        failure = self._check_common(batch.topic, len(batch_props))
        if failure is not None:
            return None, failure
        born_host, born_flag = self._born_host(batch)
        sys_flag = (
            (batch.sys_flag & ~(sf.BORNHOST_V6_FLAG | sf.STOREHOSTADDRESS_V6_FLAG))
            | born_flag
            | self._store_host_flag
        )
        topic = batch.topic.encode()
        prefix = record_prefix(sys_flag)
        fixed = prefix.size + 1 + len(topic) + 2
        view = memoryview(batch.body)
        parts: list[bytes | memoryview] = []
        starts: list[int] = []
        position = 0
        out_size = 0
        max_size = self.config.max_message_size
        pack = prefix.pack
        host = self.store_host_bytes
        topic_head = bytes((len(topic),)) + topic
        try:
            while position < len(view):
                total, _m, _c, flag, body_len = BATCH_ITEM_PREFIX.unpack_from(view, position)
                body_at = position + BATCH_ITEM_PREFIX.size
                props_at = body_at + body_len
                props_len = _SHORT.unpack_from(view, props_at)[0]
                end = props_at + 2 + props_len
                if body_len < 0 or props_len < 0 or end != position + total or end > len(view):
                    return None, _failure(
                        PutMessageStatus.MESSAGE_ILLEGAL,
                        f"batch item at byte {position} has inconsistent lengths",
                    )
                props = view[props_at + 2 : end]
                # The batch's own properties follow the message's, joined by a separator
                # when the message's do not end with one; parts, not copies.
                joint = b"\x02" if props_len and batch_props and view[end - 1] != 2 else b""
                props_total = props_len + len(joint) + len(batch_props)
                if props_total > MAX_PROPERTIES_LENGTH:
                    return None, _failure(
                        PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
                        f"properties of batch item {len(starts)} are {props_total} bytes, "
                        f"more than the limit {MAX_PROPERTIES_LENGTH}",
                    )
                size = fixed + body_len + props_total
                if size > max_size:
                    return None, _failure(
                        PutMessageStatus.MESSAGE_ILLEGAL,
                        f"batch item {len(starts)} of {size} bytes exceeds "
                        f"maxMessageSize {max_size}",
                    )
                body = view[body_at:props_at]
                starts.append(out_size)
                parts += (
                    pack(
                        size,
                        MESSAGE_MAGIC_CODE,
                        crc32(body) & 0x7FFFFFFF,  # RocketMQ's BODYCRC, inlined: hot loop
                        batch.queue_id,
                        flag,
                        0,
                        0,
                        sys_flag,
                        batch.born_timestamp,
                        born_host,
                        0,
                        host,
                        0,
                        0,
                        body_len,
                    ),
                    body,
                    topic_head,
                    _SHORT.pack(props_total),
                    props,
                    joint,
                    batch_props,
                )
                out_size += size
                position = end
        except struct.error as exc:
            return None, _failure(PutMessageStatus.MESSAGE_ILLEGAL, f"malformed batch body: {exc}")
        if not starts:
            return None, _failure(PutMessageStatus.MESSAGE_ILLEGAL, "the batch holds no message")
        if out_size > max_size:
            return None, _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"batch of {out_size} bytes exceeds maxMessageSize {max_size}",
            )
        return EncodedRecords(
            b"".join(parts), starts, 48 + len(born_host), batch.topic, batch.queue_id, sys_flag
        ), None

    # -- appending (inside the lock) -----------------------------------------------------

    def append(self, records: EncodedRecords) -> PutMessageResult:
        """Write encoded records at the end of the log: one file, consecutive queue offsets."""
        with self._put_lock:
            begin = self._clock.now_ms()
            self.begin_time_in_lock = begin
            started = time.perf_counter()
            try:
                return self._append_locked(records, begin, started)
            finally:
                self.begin_time_in_lock = 0

    def _append_locked(self, records: EncodedRecords, now: int, started: float) -> PutMessageResult:
        data = records.data
        if len(data) + END_FILE_MIN_BLANK_LENGTH > self.mapped_file_queue.mapped_file_size:
            # Checked before touching any file: a record that fits no file must not end the
            # current one with a blank record either.
            return _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"{len(data)} bytes do not fit an empty commit log file of "
                f"{self.mapped_file_queue.mapped_file_size}",
            )
        try:
            mapped = self.mapped_file_queue.last_or_create(0)
            if len(data) + END_FILE_MIN_BLANK_LENGTH > mapped.free_bytes:
                self._write_end_of_file(mapped)
                mapped = self.mapped_file_queue.last_or_create(0)
        except OSError as exc:
            log.error("cannot create a commit log file: %s", exc)
            return _failure(
                PutMessageStatus.CREATE_MAPPED_FILE_FAILED,
                f"cannot create a commit log file: {exc}",
            )
        key = f"{records.topic}-{records.queue_id}"
        tran = sf.transaction_value(records.sys_flag)
        counted = tran in (sf.TRANSACTION_NOT_TYPE, sf.TRANSACTION_COMMIT_TYPE)
        queue_offset = self.topic_queue_table.get(key, 0) if counted else 0
        base = mapped.wrote_position
        wrote_offset = mapped.file_from_offset + base
        out = bytearray(data)
        ts_pos = records.store_timestamp_position
        pack_offsets = _OFFSETS.pack_into
        pack_ts = _TIMESTAMP.pack_into
        for i, start in enumerate(records.starts):
            pack_offsets(
                out,
                start + _QUEUE_OFFSET_POSITION,
                queue_offset + i if counted else 0,
                wrote_offset + start,
            )
            pack_ts(out, start + ts_pos, now)
        try:
            mapped.write(base, out)
        except OSError as exc:
            # Nothing moved: the wrote position, the queue offsets and what reput reads stay
            # where they were, and the next append writes over whatever part got through.
            log.error("commit log write at %d failed: %s", wrote_offset, exc)
            return _failure(PutMessageStatus.UNKNOWN_ERROR, f"commit log write failed: {exc}")
        mapped.store_timestamp = now
        mapped.wrote_position = base + len(data)
        count = len(records.starts)
        if counted:
            self.topic_queue_table[key] = queue_offset + count
        return PutMessageResult(
            PutMessageStatus.PUT_OK,
            AppendMessageResult(
                AppendMessageStatus.PUT_OK,
                wrote_offset=wrote_offset,
                wrote_bytes=len(data),
                store_timestamp=now,
                logics_offset=queue_offset,
                msg_num=count,
                elapsed_ms=(time.perf_counter() - started) * 1000,
                record_offsets=list(map(wrote_offset.__add__, records.starts)),
                store_host_bytes=self.store_host_bytes,
            ),
        )

    def _write_end_of_file(self, mapped: MappedFile) -> None:
        free = mapped.free_bytes
        if free >= END_FILE_MIN_BLANK_LENGTH:
            _BLANK.pack_into(mapped.buffer, mapped.wrote_position, free, BLANK_MAGIC_CODE)
        mapped.wrote_position = mapped.file_size

    # -- reading ------------------------------------------------------------------------

    @property
    def min_offset(self) -> int:
        return self.mapped_file_queue.min_offset

    @property
    def max_offset(self) -> int:
        return self.mapped_file_queue.max_offset

    def roll_next_file(self, offset: int) -> int:
        """The start offset of the file after the one holding ``offset``."""
        size = self.config.mapped_file_size_commit_log
        return offset + size - offset % size

    def get_data(self, offset: int) -> memoryview | None:
        """Readable bytes from ``offset`` to the end of its file's written data."""
        mapped = self.mapped_file_queue.find_by_offset(offset)
        if mapped is None:
            return None
        return mapped.select(offset - mapped.file_from_offset)

    def get_message(self, offset: int, size: int) -> memoryview | None:
        """The ``size`` bytes of the record at ``offset``, or None when its file is gone."""
        mapped = self.mapped_file_queue.find_by_offset(offset)
        if mapped is None:
            return None
        position = offset - mapped.file_from_offset
        if position + size > mapped.wrote_position:
            return None
        return mapped.select(position, size)

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        """The STORETIMESTAMP of the record at ``offset``; -1 when it is not readable."""
        record = self.get_message(offset, size)
        if record is None or len(record) < 64:
            return -1
        sys_flag = struct.unpack_from(">i", record, 36)[0]
        born_len = 20 if sys_flag & sf.BORNHOST_V6_FLAG else 8
        return int(_TIMESTAMP.unpack_from(record, 48 + born_len)[0])

    def is_os_page_cache_busy(self) -> bool:
        begin = self.begin_time_in_lock
        return (
            begin > 0
            and self._clock.now_ms() - begin > self.config.os_page_cache_busy_time_out_mills
        )

    def message_id(self, offset: int) -> str:
        return create_message_id(self.store_host_bytes, offset)
