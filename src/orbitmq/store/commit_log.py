"""CommitLog: the one sequential log of every message a broker stores (R12).

Records have RocketMQ's layout (``orbitmq.common.record_layout``). A record never spans two
files: when one does not fit, the rest of the file gets an end-of-file blank record
(TOTALSIZE = bytes left, MAGICCODE 0xCBD43194) and the record goes to the next file.
"""

from __future__ import annotations

import logging
import mmap
import struct
import threading
import time
from dataclasses import dataclass
from typing import Final

from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.clock import Clock
from orbitmq.common.crc32 import INT31_MASK, crc32, isal_crc32
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.file_system import FileSystem
from orbitmq.common.message import MessageExtBatch, MessageExtBrokerInner, SocketAddress
from orbitmq.common.message_decoder import message_properties_to_string
from orbitmq.common.message_id import create_message_id
from orbitmq.common.record_layout import (
    BLANK_MAGIC_CODE,
    END_FILE_MIN_BLANK_LENGTH,
    HOST_V6_FLAGS,
    MAX_PROPERTIES_LENGTH,
    MESSAGE_MAGIC_CODE,
    MIN_RECORD_SIZE,
    PROPERTIESLEN,
    RECORD_HEAD,
    SYSFLAG_POSITION,
    TOPICLEN,
    batch_items,
    calc_msg_length,
    record_prefix,
    store_timestamp_position,
)
from orbitmq.common.socket_address import is_ipv6, pack_socket_address
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC, topic_problem
from orbitmq.store.commit_log_group import append_group_locked
from orbitmq.store.get_message_result import ColdBytes
from orbitmq.store.mapped_file import Allocation, MappedFile
from orbitmq.store.mapped_file_queue import MappedFileQueue
from orbitmq.store.message_store_config import MessageStoreConfig
from orbitmq.store.put_message_result import (
    AppendMessageResult,
    AppendMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)
from orbitmq.store.timer.timer_intake import TIMER_REQUEST_KEYS, transform_timer_message

log = logging.getLogger(__name__)

#: How far ahead of the writer a commit log file that is not preallocated reserves blocks,
#: at most: appends into reserved blocks cost 2-3 us of CPU less per 1 KiB message than
#: appends that allocate as they go (benchmarks.md, "sparse files").
COMMIT_LOG_ALLOCATION_CHUNK: Final = 64 * 1024 * 1024
_SYSFLAG: Final = struct.Struct(">i")
_STORETIMESTAMP: Final = struct.Struct(">q")
_UNCHECKED: Final = "?"
_BATCH_TRANSACTION_TYPES: Final = (sf.TRANSACTION_NOT_TYPE, sf.TRANSACTION_COMMIT_TYPE)
#: Stands for a result the group append will give, in ``put_message_group``.
_GROUPED: Final = PutMessageResult(PutMessageStatus.UNKNOWN_ERROR, None, "grouped")


@dataclass(slots=True)
class _Encoded:
    """Records encoded with their final queue and physical offsets and store time."""

    data: bytes
    #: Start of each record within ``data``.
    starts: list[int]


@dataclass(slots=True)
class _PreparedMessage:
    """One message, checked and with its host fields packed before the put lock; encoded
    under it, where its offsets and store time are known."""

    msg: MessageExtBrokerInner
    topic_raw: bytes
    props: bytes
    born_host: bytes
    sys_flag: int
    size: int

    @property
    def topic(self) -> str:
        return self.msg.topic

    @property
    def queue_id(self) -> int:
        return self.msg.queue_id

    def encode(self, log: CommitLog, wrote_offset: int, queue_offset: int, now: int) -> _Encoded:
        msg = self.msg
        body = msg.body
        data = b"".join(
            (
                record_prefix(self.sys_flag).pack(
                    self.size,
                    MESSAGE_MAGIC_CODE,
                    crc32(body),
                    msg.queue_id,
                    msg.flag,
                    queue_offset,
                    wrote_offset,
                    self.sys_flag,
                    msg.born_timestamp,
                    self.born_host,
                    now,
                    log.store_host_bytes,
                    msg.reconsume_times,
                    msg.prepared_transaction_offset,
                    len(body),
                ),
                body,
                TOPICLEN.pack(len(self.topic_raw)),
                self.topic_raw,
                PROPERTIESLEN.pack(len(self.props)),
                self.props,
            )
        )
        return _Encoded(data, [0])


@dataclass(slots=True)
class _PreparedBatch:
    """A client batch (RocketMQ's MessageExtBatch), checked before the put lock; its items are
    walked and encoded under it."""

    batch: MessageExtBatch
    batch_props: bytes
    born_host: bytes
    sys_flag: int

    @property
    def topic(self) -> str:
        return self.batch.topic

    @property
    def queue_id(self) -> int:
        return self.batch.queue_id

    def encode(
        self, log: CommitLog, wrote_offset: int, queue_offset: int, now: int
    ) -> _Encoded | PutMessageResult:
        batch = self.batch
        batch_props = self.batch_props
        topic = batch.topic.encode()
        prefix = record_prefix(self.sys_flag)
        fixed = calc_msg_length(self.sys_flag, 0, len(topic), 0)
        view = memoryview(batch.body)
        parts: list[bytes | memoryview] = []
        starts: list[int] = []
        out_size = 0
        max_size = log.config.max_message_size
        pack = prefix.pack
        pack_props_len = PROPERTIESLEN.pack
        host = log.store_host_bytes
        born_host = self.born_host
        sys_flag = self.sys_flag
        queue_id = batch.queue_id
        born_timestamp = batch.born_timestamp
        prepared_offset = batch.prepared_transaction_offset
        topic_head = TOPICLEN.pack(len(topic)) + topic
        props_len_size = PROPERTIESLEN.size
        try:
            for flag, body_at, props_at, end in batch_items(view):
                body = view[body_at : props_at - props_len_size]
                # The batch's own properties follow the message's, joined by a separator
                # when the message's do not end with one; parts, not copies.
                joint = b"\x02" if end > props_at and batch_props and view[end - 1] != 2 else b""
                props_total = end - props_at + len(joint) + len(batch_props)
                size = fixed + len(body) + props_total
                if props_total > MAX_PROPERTIES_LENGTH or size > max_size:
                    return _item_failure(len(starts), props_total, size, max_size)
                parts += (
                    pack(
                        size,
                        MESSAGE_MAGIC_CODE,
                        isal_crc32(body) & INT31_MASK,  # crc32(body), without a call
                        queue_id,
                        flag,
                        queue_offset + len(starts),
                        wrote_offset + out_size,
                        sys_flag,
                        born_timestamp,
                        born_host,
                        now,
                        host,
                        0,
                        prepared_offset,
                        len(body),
                    ),
                    body,
                    topic_head,
                    pack_props_len(props_total),
                    view[props_at:end],
                    joint,
                    batch_props,
                )
                starts.append(out_size)
                out_size += size
        except MessageFormatError as exc:
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL, str(exc))
        except struct.error as exc:  # a header field that does not fit its int type
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL, f"malformed batch: {exc}")
        if not starts:
            return _failure(PutMessageStatus.MESSAGE_ILLEGAL, "the batch holds no message")
        if out_size > max_size:
            return _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"batch of {out_size} bytes exceeds maxMessageSize {max_size}",
            )
        return _Encoded(b"".join(parts), starts)


def _item_failure(index: int, props_total: int, size: int, max_size: int) -> PutMessageResult:
    """Why batch item ``index`` cannot be stored, with its properties (its own and the
    batch's) and its record this large."""
    if props_total > MAX_PROPERTIES_LENGTH:
        return _failure(
            PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
            f"properties of batch item {index} are {props_total} bytes, "
            f"more than the limit {MAX_PROPERTIES_LENGTH}",
        )
    return _failure(
        PutMessageStatus.MESSAGE_ILLEGAL,
        f"batch item {index} of {size} bytes exceeds maxMessageSize {max_size}",
    )


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
            allocation=Allocation(
                preallocate=config.warm_maped_file_enable,
                max_chunk=COMMIT_LOG_ALLOCATION_CHUNK,
                zero_fill=False,
            ),
        )
        if not config.data_read_ahead_enable:
            # RocketMQ's isCloseReadAhead: the mappings are read without read-ahead.
            self.mapped_file_queue.read_mode = mmap.MADV_RANDOM
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
        #: How long (ms) the last append held the put lock: a slow disk shows here first.
        self.last_lock_held_ms = 0.0
        #: Counts the cold bytes of every read (``ColdDataCheckService.cold_bytes``, set by
        #: the broker's cold data flow control); None: reads count none.
        self.cold_bytes: ColdBytes | None = None

    def set_store_host(self, store_host: SocketAddress) -> None:
        """The address written into records from now on (a broker that bound port 0 learns
        its port only at start)."""
        self.store_host = store_host
        self.store_host_bytes = pack_socket_address(store_host)
        self._store_host_flag = sf.STOREHOSTADDRESS_V6_FLAG if is_ipv6(store_host) else 0

    # -- checks before the lock ----------------------------------------------------------

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

    def _host_fields(self, msg: MessageExtBrokerInner) -> tuple[bytes, int]:
        """The packed born host, and the SYSFLAG to store: the message's, with the two host
        bits of the actual addresses. Producers are few, so packed hosts are cached."""
        packed = self._born_hosts.get(msg.born_host)
        if packed is None:
            if len(self._born_hosts) >= 4096:
                self._born_hosts.clear()
            flag = sf.BORNHOST_V6_FLAG if is_ipv6(msg.born_host) else 0
            packed = self._born_hosts[msg.born_host] = (pack_socket_address(msg.born_host), flag)
        born_host, born_flag = packed
        sys_flag = (msg.sys_flag & ~HOST_V6_FLAGS) | born_flag | self._store_host_flag
        return born_host, sys_flag

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Append one message (RocketMQ's putMessage): checked first, then encoded and
        written under the put lock."""
        prepared = self._prepare_message(msg)
        if isinstance(prepared, PutMessageResult):
            return prepared
        return self._put(prepared)

    def _prepare_message(self, msg: MessageExtBrokerInner) -> _PreparedMessage | PutMessageResult:
        """Timer intake, delay level, checks and host fields; the refusal if any."""
        if not TIMER_REQUEST_KEYS.isdisjoint(msg.properties):
            refused = transform_timer_message(msg, self.config, self._clock.now_ms())
            if refused is not None:
                return refused
        self._apply_delay_level(msg)
        props_text = msg.properties_string or message_properties_to_string(msg.properties)
        props = props_text.encode()
        failure = self._check_common(msg.topic, len(props))
        if failure is not None:
            return failure
        born_host, sys_flag = self._host_fields(msg)
        topic = msg.topic.encode()
        size = calc_msg_length(sys_flag, len(msg.body), len(topic), len(props))
        if size > self.config.max_message_size:
            return _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"message of {size} bytes (body {len(msg.body)}) exceeds maxMessageSize "
                f"{self.config.max_message_size}",
            )
        return _PreparedMessage(msg, topic, props, born_host, sys_flag, size)

    def put_message_group(self, msgs: list[MessageExtBrokerInner]) -> list[PutMessageResult]:
        """Append several single messages of any topics and queues, each as ``put_message``
        would, with one write per commit log file instead of one each (the timer store's
        deliveries: a syscall per message would cap them near 20,000/s). One result each."""
        results: list[PutMessageResult] = []
        group: list[_PreparedMessage] = []
        for msg in msgs:
            prepared = self._prepare_message(msg)
            if isinstance(prepared, PutMessageResult):
                results.append(prepared)
            elif sf.transaction_value(prepared.sys_flag) not in _BATCH_TRANSACTION_TYPES:
                results.append(self._put(prepared))  # a half: not counted in its queue
            else:
                results.append(_GROUPED)
                group.append(prepared)
        grouped = iter(self._put_group(group)) if group else iter(())
        return [next(grouped) if r is _GROUPED else r for r in results]

    def _put_group(self, group: list[_PreparedMessage]) -> list[PutMessageResult]:
        results: list[PutMessageResult] = []
        with self._put_lock:
            now = self.begin_time_in_lock = self._clock.now_ms()
            try:
                while len(results) < len(group):
                    done = append_group_locked(self, group[len(results) :], now)
                    if not done:  # the next one does not fit this file: alone, as ever
                        done = [self._append_locked(group[len(results)], now, time.perf_counter())]
                    results += done
            finally:
                self.begin_time_in_lock = 0
        return results

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        """Append every message of a client batch body (RocketMQ's putMessages), in one file
        with consecutive queue offsets.

        The batch's own properties are appended to each message's, as RocketMQ does.
        """
        # A committed transaction's batch (a staged batch's commit) is stored; halves are
        # single messages, and rolled-back messages are never stored.
        tran = sf.transaction_value(batch.sys_flag)
        if batch.delay_time_level > 0 or tran not in _BATCH_TRANSACTION_TYPES:
            return _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                "a batch cannot hold delayed, half or rolled-back messages",
            )
        batch_props = (
            batch.properties_string or message_properties_to_string(batch.properties)
        ).encode()
        failure = self._check_common(batch.topic, len(batch_props))
        if failure is not None:
            return failure
        born_host, sys_flag = self._host_fields(batch)
        return self._put(_PreparedBatch(batch, batch_props, born_host, sys_flag))

    # -- appending (inside the lock) -----------------------------------------------------

    def _put(self, prepared: _PreparedMessage | _PreparedBatch) -> PutMessageResult:
        with self._put_lock:
            begin = self._clock.now_ms()
            self.begin_time_in_lock = begin
            started = time.perf_counter()
            try:
                return self._append_locked(prepared, begin, started)
            finally:
                self.begin_time_in_lock = 0
                self.last_lock_held_ms = (time.perf_counter() - started) * 1000

    def _append_locked(
        self, prepared: _PreparedMessage | _PreparedBatch, now: int, started: float
    ) -> PutMessageResult:
        # Encoded here, with the final offsets and store time, so the bytes go to the file
        # as encoded: no second pass to patch them in, no copy to patch into.
        key = f"{prepared.topic}-{prepared.queue_id}"
        tran = sf.transaction_value(prepared.sys_flag)
        counted = tran in (sf.TRANSACTION_NOT_TYPE, sf.TRANSACTION_COMMIT_TYPE)
        queue_offset = self.topic_queue_table.get(key, 0) if counted else 0
        queue = self.mapped_file_queue
        wrote_offset = queue.max_offset
        encoded = prepared.encode(self, wrote_offset, queue_offset, now)
        if isinstance(encoded, PutMessageResult):
            return encoded
        data = encoded.data
        if len(data) + END_FILE_MIN_BLANK_LENGTH > queue.mapped_file_size:
            # Checked before touching any file: a record that fits no file must not end the
            # current one with a blank record either.
            return _failure(
                PutMessageStatus.MESSAGE_ILLEGAL,
                f"{len(data)} bytes do not fit an empty commit log file of "
                f"{queue.mapped_file_size}",
            )
        try:
            mapped = queue.last_or_create(0)
            if len(data) + END_FILE_MIN_BLANK_LENGTH > mapped.free_bytes:
                self._write_end_of_file(mapped)
                mapped = queue.last_or_create(0)
        except OSError as exc:
            log.error("cannot create a commit log file: %s", exc)
            return _failure(
                PutMessageStatus.CREATE_MAPPED_FILE_FAILED,
                f"cannot create a commit log file: {exc}",
            )
        base = mapped.wrote_position
        if mapped.file_from_offset + base != wrote_offset:
            # A new file (the first, or the next after an end-of-file record): encoded again
            # at its start, which is where the physical offsets now point.
            wrote_offset = mapped.file_from_offset + base
            encoded = prepared.encode(self, wrote_offset, queue_offset, now)
            assert not isinstance(encoded, PutMessageResult)  # it encoded once already
            data = encoded.data
        try:
            mapped.reserve(base + len(data))
            mapped.write(base, data)
        except OSError as exc:
            # Nothing moved: the wrote position, the queue offsets and what reput reads stay
            # where they were, and the next append writes over whatever part got through.
            log.error("commit log write at %d failed: %s", wrote_offset, exc)
            return _failure(PutMessageStatus.UNKNOWN_ERROR, f"commit log write failed: {exc}")
        mapped.store_timestamp = now
        mapped.wrote_position = base + len(data)
        count = len(encoded.starts)
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
                record_offsets=list(map(wrote_offset.__add__, encoded.starts)),
                store_host_bytes=self.store_host_bytes,
            ),
        )

    def _write_end_of_file(self, mapped: MappedFile) -> None:
        free = mapped.free_bytes
        if free >= END_FILE_MIN_BLANK_LENGTH:
            # Through the file, as every append.
            mapped.reserve(mapped.wrote_position + RECORD_HEAD.size)
            mapped.write(mapped.wrote_position, RECORD_HEAD.pack(free, BLANK_MAGIC_CODE))
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
        if record is None or len(record) < MIN_RECORD_SIZE:
            return -1
        sys_flag = _SYSFLAG.unpack_from(record, SYSFLAG_POSITION)[0]
        return int(_STORETIMESTAMP.unpack_from(record, store_timestamp_position(sys_flag))[0])

    def is_os_page_cache_busy(self) -> bool:
        """The put lock has been held longer than osPageCacheBusyTimeOutMills by the append
        holding it now (RocketMQ's isOSPageCacheBusy). Safe from any thread."""
        begin = self.begin_time_in_lock
        return (
            begin > 0
            and self._clock.now_ms() - begin > self.config.os_page_cache_busy_time_out_mills
        )

    def message_id(self, offset: int) -> str:
        return create_message_id(self.store_host_bytes, offset)
