"""MessageStore: the storage engine's face — puts, reads, queries, lifecycle.

It wires the commit log, consume queues, index, checkpoint, flush, dispatch and retention
services together (RocketMQ's DefaultMessageStore). Puts and reads are safe from several
threads and from an event loop: appends hold a short lock, syncs happen on flush threads.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable, Iterator

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.delay_level import parse_delay_levels
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.common.message import MessageExt, MessageExtBatch, MessageExtBrokerInner, SocketAddress
from orbitmq.common.message_decoder import decode_message
from orbitmq.common.record_layout import RECORD_HEAD, TOTALSIZE_POSITION
from orbitmq.common.service import Service
from orbitmq.store.clean_service import CleanCommitLogService, CleanResourceService
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.commit_log_dispatcher import (
    CommitLogDispatcherBuildConsumeQueue,
    CommitLogDispatcherBuildIndex,
)
from orbitmq.store.consume_queue import ConsumeQueue, is_message_unit
from orbitmq.store.consume_queue_flush_set import ConsumeQueueFlushSet
from orbitmq.store.flush_service import (
    FlushConsumeQueueService,
    FlushRealTimeService,
    GroupCommitService,
)
from orbitmq.store.get_message_result import GetMessageResult, QueryMessageResult
from orbitmq.store.index_service import IndexService
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.mapped_file_cache import MappedFileCache, open_files_bound
from orbitmq.store.mapped_page_release_service import MappedPageReleaseService
from orbitmq.store.message_filter import MessageFilter
from orbitmq.store.message_query import query_message
from orbitmq.store.message_reader import read_messages
from orbitmq.store.message_store_config import BrokerRole, FlushDiskType, MessageStoreConfig
from orbitmq.store.put_message_result import PutMessageResult, PutMessageStatus
from orbitmq.store.put_wait import (
    GroupCommitRequest,
    GroupTransfer,
    PutWait,
    PutWaiters,
    await_put_wait,
)
from orbitmq.store.recovery import RecoveryReport, recover_logic, scan_commit_log
from orbitmq.store.reput_message_service import (
    CommitLogDispatcher,
    MessageArrivingListener,
    ReputMessageService,
)
from orbitmq.store.running_flags import RunningFlags
from orbitmq.store.store_checkpoint import StoreCheckpoint
from orbitmq.store.store_lock import StoreLock

log = logging.getLogger(__name__)

#: An event loop's put dispatches its records itself when fewer bytes than this wait: a
#: single send or a small batch. Larger backlogs go to the reput thread, so that a big
#: batch does not hold the loop for the milliseconds its dispatch takes.
_INLINE_DISPATCH_BELOW_BYTES = 64 * 1024


class MessageStore:
    """Owns every file under ``store_path_root_dir`` and the services that maintain them.

    Lifecycle: ``load()`` (takes the directory's lock, then recovers; returns the report),
    ``start()``, ``shutdown()`` (gives the lock back). Nothing under the root is opened
    before the lock is held, so a store refused with ``StoreLockedError`` changed nothing.
    """

    def __init__(
        self,
        config: MessageStoreConfig,
        *,
        store_host: SocketAddress = ("127.0.0.1", 10911),
        clock: Clock = SYSTEM_CLOCK,
        fs: FileSystem = OS_FILE_SYSTEM,
        message_arriving_listener: MessageArrivingListener | None = None,
    ):
        self.config = config
        self.clock = clock
        self.fs = fs
        self.delay_levels_ms = parse_delay_levels(config.message_delay_level)
        self.running_flags = RunningFlags()
        self.lock = StoreLock(config.store_path_root_dir, fs)
        self.checkpoint = StoreCheckpoint(config.checkpoint_file, fs)
        self.commit_log = CommitLog(config, fs, clock, store_host, self.delay_levels_ms)
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        #: Consume-queue files open at once, whatever the number of queues (R19).
        self.consume_queue_file_cache = MappedFileCache(
            open_files_bound(config.max_open_consume_queue_files)
        )
        self._flush_set = ConsumeQueueFlushSet()
        #: The commit log's min offset at the last consume-queue clean-up.
        self._cleaned_at_min_phy_offset = -1
        self.index_service = IndexService(config, fs)
        dispatchers: list[CommitLogDispatcher] = [
            CommitLogDispatcherBuildConsumeQueue(
                self.get_or_create_consume_queue, self._flush_set.mark
            )
        ]
        if config.message_index_enable:
            dispatchers.append(CommitLogDispatcherBuildIndex(self.index_service))
        self.reput_message_service = ReputMessageService(
            self.commit_log,
            dispatchers,
            self.delay_levels_ms,
            config.reput_idle_interval,
            config.max_message_size,
            clock,
            message_arriving_listener,
            self.running_flags,
        )
        self.reput_message_service.partial_tail_expected = config.broker_role is BrokerRole.SLAVE
        self.group_commit_service, self.flush_real_time_service = self._flush_services()
        self.flush_consume_queue_service = FlushConsumeQueueService(
            config, self._flush_logic, self.checkpoint, clock
        )
        self.clean_commit_log_service = CleanCommitLogService(
            config, self.commit_log, fs, clock, self.running_flags
        )
        self.clean_resource_service = CleanResourceService(
            config, self.clean_commit_log_service, self._clean_logic
        )
        #: Reads served, for the idle check of the page release (approximate across threads:
        #: only whether it moved matters).
        self.read_count = 0
        self.mapped_page_release_service: MappedPageReleaseService | None = None
        if config.mapped_page_release_idle_interval > 0:
            self.mapped_page_release_service = MappedPageReleaseService(
                config.mapped_page_release_idle_interval,
                lambda: (self.commit_log.max_offset, self.read_count),
                self.release_mapped_pages,
                clock,
            )
        self.recovery_report: RecoveryReport | None = None
        #: Called after every append (the HA service's wakeup); must only set a flag.
        self.on_append: Callable[[], None] | None = None
        #: A SYNC_MASTER's replication (the HA service): sends wait for a slave's report.
        self.group_transfer: GroupTransfer | None = None
        self._started = False
        self._shutdown = False

    # -- lifecycle ----------------------------------------------------------------------

    def _flush_services(self) -> tuple[GroupCommitService | None, FlushRealTimeService | None]:
        """The commit log's flusher: the group commit under SYNC_FLUSH, else the periodic one."""
        queue = self.commit_log.mapped_file_queue
        if self.config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
            return GroupCommitService(queue, self.checkpoint), None
        return None, FlushRealTimeService(queue, self.config, self.checkpoint, self.clock)

    def load(self) -> RecoveryReport:
        """Lock the directory, open every file and recover; afterwards consume queues and
        index match the log. Raises ``StoreLockedError`` when another store holds it."""
        self.lock.acquire()
        abnormal = os.path.exists(self.config.abort_file)
        self.checkpoint.load()
        self.commit_log.mapped_file_queue.load()
        self._load_consume_queues()
        if self.config.message_index_enable:
            self.index_service.load()
        report = scan_commit_log(
            self.commit_log,
            abnormal,
            self.checkpoint,
            self.config.check_crc_on_recover,
            self.config.message_index_safe,
        )
        recover_logic(
            report,
            self.commit_log,
            list(self.all_consume_queues()),
            self.index_service if self.config.message_index_enable else None,
            index_was_built=self.checkpoint.index_msg_timestamp > 0,
        )
        self.reput_message_service.reput_from_offset = report.reput_from_offset
        # Rebuild what is missing before any new put takes a queue offset (RocketMQ waits
        # for the dispatch to catch up, then recomputes the table).
        self.reput_message_service.do_reput()
        self.recover_topic_queue_table()
        # What recovery cut or rebuilt reaches the disk with the first flush round.
        self._flush_set.keep_unflushed(self.all_consume_queues())
        self.recovery_report = report
        return report

    def _load_consume_queues(self) -> None:
        root = self.config.consume_queue_dir
        if not os.path.isdir(root):
            return
        for topic in sorted(os.listdir(root)):
            topic_dir = os.path.join(root, topic)
            if not os.path.isdir(topic_dir):
                continue
            for queue_dir in sorted(os.listdir(topic_dir)):
                if queue_dir.isdigit():
                    self.get_or_create_consume_queue(topic, int(queue_dir)).load()

    def recover_topic_queue_table(self) -> None:
        min_phy = self.commit_log.min_offset
        table: dict[str, int] = {}
        for queue in self.all_consume_queues():
            table[f"{queue.topic}-{queue.queue_id}"] = queue.max_offset_in_queue
            queue.correct_min_offset(min_phy)
        self.commit_log.topic_queue_table = table

    def start(self) -> None:
        """Start the background services and mark the store as running (abort file)."""
        os.makedirs(self.config.config_dir, exist_ok=True)
        os.close(self.fs.open(self.config.abort_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC))
        for service in self._services():
            service.start()
        self._started = True

    def shutdown(self) -> None:
        """Stop services, flush everything, and remove the abort file (a normal exit)."""
        if self._shutdown:
            return
        self._shutdown = True
        if not self.lock.held:
            return  # refused, or never loaded: nothing was opened
        if self.recovery_report is not None:
            for service in self._services():
                service.shutdown()
            self.reput_message_service.do_reput()
            self.commit_log.mapped_file_queue.flush(0)
            self.flush_consume_queue_service.do_flush(0)
        # else a load that failed half way: close what it opened, write nothing.
        self.commit_log.mapped_file_queue.shutdown()
        for queue in self.all_consume_queues():
            queue.shutdown()
        self.index_service.shutdown()
        self.checkpoint.shutdown()
        if self._started and self.reput_message_service.behind_bytes == 0:
            self.fs.unlink(self.config.abort_file)
        self.lock.release()

    def _services(self) -> Iterator[Service]:
        """Background services, in shutdown order: producers of writes before flushers."""
        yield self.clean_resource_service
        yield self.reput_message_service
        if self.flush_real_time_service is not None:
            yield self.flush_real_time_service
        if self.group_commit_service is not None:
            yield self.group_commit_service
        yield self.flush_consume_queue_service
        if self.mapped_page_release_service is not None:
            yield self.mapped_page_release_service

    def mapped_files(self) -> Iterator[MappedFile]:
        """Every mapped file of the store: commit log, consume queues and index files."""
        yield from self.commit_log.mapped_file_queue.mapped_files
        for queue in self.all_consume_queues():
            yield from queue.mapped_file_queue.mapped_files
        for index_file in list(self.index_service.index_files):
            yield index_file.mapped_file

    def release_mapped_pages(self) -> int:
        """Drop every mapped file's pages from the process (they stay in the page cache);
        returns how many files were released."""
        count = 0
        for mapped in self.mapped_files():
            if mapped.is_open:  # a consume-queue file the cache closed has no pages mapped
                mapped.release_pages()
                count += 1
        return count

    # -- puts -----------------------------------------------------------------------------

    def _check_store_status(self) -> PutMessageResult | None:
        if self._shutdown:
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, None, "the store is shut down"
            )
        if self.config.broker_role is BrokerRole.SLAVE:
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE, None, "a slave does not accept writes"
            )
        if not self.running_flags.is_writeable:
            return PutMessageResult(
                PutMessageStatus.SERVICE_NOT_AVAILABLE,
                None,
                f"the store refuses writes: {self.running_flags.refusal_reason}",
            )
        if self.commit_log.is_os_page_cache_busy():
            # No remark of its own: the answer is RocketMQ's "[PC_SYNCHRONIZED]..." as is.
            return PutMessageResult(PutMessageStatus.OS_PAGE_CACHE_BUSY, None)
        return None

    def append(
        self, msg: MessageExtBrokerInner, waiters: PutWaiters | None = None
    ) -> tuple[PutMessageResult, PutWait | None]:
        """The checks and the append under the put lock, from any thread (a thread keeps a
        slow disk's append off the loop); an event loop then awaits ``await_put`` with the
        ``waiters`` it made (``put_waiters``). The wait is None when the answer need not
        wait for a sync or a slave."""
        failure = self._check_store_status()
        if failure is not None:
            return failure, None
        if isinstance(msg, MessageExtBatch):
            result = self.commit_log.put_messages(msg)
        else:
            result = self.commit_log.put_message(msg)
        if not result.is_ok or result.append_result is None:
            return result, None
        append = result.append_result
        if self.on_append is not None:
            self.on_append()
        if self.flush_real_time_service is not None:
            self.flush_real_time_service.wakeup_after_append()
        if not msg.wait_store_msg_ok or (
            self.group_commit_service is None and self.group_transfer is None
        ):
            return result, None
        end = append.wrote_offset + append.wrote_bytes
        wait = PutWait()
        if self.group_commit_service is not None:
            wait.flush = GroupCommitRequest(end, waiters.flush if waiters else None)
            self.group_commit_service.put_request(wait.flush)
        transfer = self.group_transfer
        if transfer is not None:
            if transfer.is_slave_ok(end):
                wait.replica = GroupCommitRequest(end, waiters.replica if waiters else None)
                transfer.put_request(wait.replica)
            else:
                wait.replica_status = PutMessageStatus.SLAVE_NOT_AVAILABLE
        return result, wait

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Store one message (or a MessageExtBatch), blocking until durable under SYNC_FLUSH
        and held by a slave under SYNC_MASTER.

        For threads; an event loop uses ``async_put_message``.
        """
        result, wait = self.append(msg)
        if result.is_ok:
            self.reput_message_service.wakeup()
        if wait is not None:
            config = self.config
            result.status = wait.wait(config.sync_flush_timeout / 1000, config.slave_timeout / 1000)
        return result

    async def async_put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        """Store one message (or a MessageExtBatch); under SYNC_FLUSH (SYNC_MASTER) the answer
        comes once the sync (the slave's report) that covers it has come, without blocking the
        loop."""
        waiters = self.put_waiters()
        result, wait = self.append(msg, waiters)
        return await self.await_put(result, wait, waiters)

    def put_waiters(self) -> PutWaiters | None:
        """On the loop: the futures a put's sync and slave answer (None when neither waits)."""
        flush = self.group_commit_service is not None
        if not flush and self.group_transfer is None:
            return None
        loop = asyncio.get_running_loop()
        return PutWaiters(
            loop.create_future() if flush else None,
            loop.create_future() if self.group_transfer is not None else None,
        )

    async def await_put(
        self, result: PutMessageResult, wait: PutWait | None, waiters: PutWaiters | None
    ) -> PutMessageResult:
        """The second half of ``async_put_message``, on the loop: dispatch, and the waits."""
        if not result.is_ok:
            return result
        reput = self.reput_message_service
        if wait is None or waiters is None:
            reput.dispatch_soon(_INLINE_DISPATCH_BELOW_BYTES)
            return result
        if reput.behind_bytes >= _INLINE_DISPATCH_BELOW_BYTES:
            reput.wakeup()  # a big append: its thread dispatches it while the sync runs
        config = self.config
        try:
            result.status = await await_put_wait(
                wait, waiters, config.sync_flush_timeout / 1000, config.slave_timeout / 1000
            )
        finally:
            # Dispatched once the sync is done, not while it runs: the group commit thread
            # needs the GIL to start and to answer, and dispatching here first made it wait
            # behind this loop (send -> ack p99 about 30 ms against 11-15 at 2000 msg/s).
            reput.dispatch_soon(_INLINE_DISPATCH_BELOW_BYTES)
        return result

    def put_message_group(
        self, msgs: list[MessageExtBrokerInner], *, dispatch_inline: bool = False
    ) -> list[PutMessageResult]:
        """Store several messages (any topics, no waiting for a sync flush) with one write;
        one result each. For threads: the timer store delivers with it. ``dispatch_inline``
        (an event loop's small groups, such as revive log records) dispatches them on the
        calling thread as ``async_put_message`` does, instead of waking the reput thread."""
        failure = self._check_store_status()
        results = [failure] * len(msgs) if failure else self.commit_log.put_message_group(msgs)
        if dispatch_inline:
            self.reput_message_service.dispatch_soon(_INLINE_DISPATCH_BELOW_BYTES)
        else:
            self.reput_message_service.wakeup()
        if self.on_append is not None:
            self.on_append()
        if self.flush_real_time_service is not None:
            self.flush_real_time_service.wakeup_after_append()
        return results

    def put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        return self.put_message(batch)

    async def async_put_messages(self, batch: MessageExtBatch) -> PutMessageResult:
        return await self.async_put_message(batch)

    # -- consume queues -------------------------------------------------------------------

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        queues = self.consume_queue_table.get(topic)
        return queues.get(queue_id) if queues is not None else None

    def get_or_create_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        queue = self.find_consume_queue(topic, queue_id)
        if queue is None:
            queue = ConsumeQueue(
                topic,
                queue_id,
                self.config.consume_queue_dir,
                self.config.mapped_file_size_consume_queue,
                self.fs,
                self.consume_queue_file_cache,
            )
            self.consume_queue_table.setdefault(topic, {})[queue_id] = queue
        return queue

    def all_consume_queues(self) -> Iterator[ConsumeQueue]:
        for queues in list(self.consume_queue_table.values()):
            yield from list(queues.values())

    def _flush_logic(self, least_pages: int) -> int:
        timestamp = self.reput_message_service.last_dispatched_timestamp
        self._flush_set.flush(least_pages)
        if self.config.message_index_enable:
            index_timestamp = self.index_service.flush()
            if index_timestamp > 0:
                self.checkpoint.index_msg_timestamp = index_timestamp
        return timestamp

    def _clean_logic(self) -> int:
        min_phy = self.commit_log.min_offset
        deleted = 0
        # Consume queues lose files only when the commit log lost some (RocketMQ's
        # CleanConsumeQueueService compares with lastPhysicalMinOffset too): no visit to
        # every queue of the broker every round.
        if min_phy == self._cleaned_at_min_phy_offset:
            return deleted
        self._cleaned_at_min_phy_offset = min_phy
        for queue in self.all_consume_queues():
            deleted += queue.delete_expired_file(min_phy)
        if self.config.message_index_enable:
            deleted += self.index_service.delete_expired_file(min_phy)
        return deleted

    def delete_topics(self, topics: set[str]) -> int:
        """Drop the consume queues of ``topics``; their records stay until retention."""
        removed = 0
        for topic in topics:
            queues = self.consume_queue_table.pop(topic, {})
            for queue in queues.values():
                queue.destroy()
                self.commit_log.topic_queue_table.pop(f"{topic}-{queue.queue_id}", None)
                removed += 1
            topic_dir = os.path.join(self.config.consume_queue_dir, topic)
            if os.path.isdir(topic_dir) and not any(os.scandir(topic_dir)):
                self.fs.remove_directory(topic_dir)
        return removed

    # -- reads ----------------------------------------------------------------------------

    def get_message(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
        max_total_bytes: int | None = None,
    ) -> GetMessageResult:
        """Up to ``max_msg_nums`` messages of a queue from ``offset`` (RocketMQ's getMessage),
        and no more than ``max_total_bytes`` of records (at least one message is returned)."""
        del group  # RocketMQ keys per-group read statistics on it; nothing else uses it here.
        self.read_count += 1
        return read_messages(
            self.config,
            self.commit_log,
            self.find_consume_queue(topic, queue_id),
            offset,
            max_msg_nums,
            message_filter,
            max_total_bytes,
        )

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        queue = self.find_consume_queue(topic, queue_id)
        return queue.max_offset_in_queue if queue is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        queue = self.find_consume_queue(topic, queue_id)
        return queue.min_offset_in_queue if queue is not None else 0

    def get_commit_log_offset_in_queue(self, topic: str, queue_id: int, offset: int) -> int:
        queue = self.find_consume_queue(topic, queue_id)
        unit = queue.read_unit(offset) if queue is not None else None
        return unit[0] if unit is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """The first queue offset whose message was stored at or after ``timestamp`` (ms);
        the max offset when every message is older."""
        queue = self.find_consume_queue(topic, queue_id)
        if queue is None:
            return 0
        pickup = self.commit_log.pickup_store_timestamp
        return queue.find_offset(lambda offset, size: pickup(offset, size) >= timestamp)

    def get_message_unit_in_queue(
        self, topic: str, queue_id: int, offset: int
    ) -> tuple[int, int, int] | None:
        """(commit log offset, size, tag code) of the message at queue offset ``offset``;
        None when nothing readable is there or the unit is a blank one."""
        queue = self.find_consume_queue(topic, queue_id)
        unit = queue.read_unit(offset) if queue is not None else None
        return unit if unit is not None and is_message_unit(unit[0], unit[1]) else None

    def get_message_store_timestamp(self, topic: str, queue_id: int, offset: int) -> int:
        queue = self.find_consume_queue(topic, queue_id)
        unit = queue.read_unit(offset) if queue is not None else None
        return self.commit_log.pickup_store_timestamp(unit[0], unit[1]) if unit else -1

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        return self.get_message_store_timestamp(
            topic, queue_id, self.get_min_offset_in_queue(topic, queue_id)
        )

    def select_one_message_by_offset(
        self, commit_log_offset: int, size: int | None = None
    ) -> memoryview | None:
        """The stored record at ``commit_log_offset``."""
        if size is None:
            head = self.commit_log.get_message(commit_log_offset, RECORD_HEAD.size)
            if head is None:
                return None
            size = RECORD_HEAD.unpack_from(head, TOTALSIZE_POSITION)[0]
        if size <= 0:
            return None
        return self.commit_log.get_message(commit_log_offset, size)

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        record = self.select_one_message_by_offset(commit_log_offset)
        return decode_message(record) if record is not None else None

    def query_message(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> QueryMessageResult:
        """Messages of ``topic`` whose KEYS or UNIQ_KEY equal ``key``, stored in [begin, end]."""
        limit = (
            min(max_num, self.config.max_msgs_num_batch)
            if max_num > 0
            else self.config.default_query_max_num
        )
        request = (topic, key, limit, begin, end)
        return query_message(self.index_service, self.select_one_message_by_offset, request)

    @property
    def max_phy_offset(self) -> int:
        return self.commit_log.max_offset

    @property
    def min_phy_offset(self) -> int:
        return self.commit_log.min_offset

    @property
    def flushed_phy_offset(self) -> int:
        """How far the commit log is synced (read from any thread)."""
        return self.commit_log.mapped_file_queue.flushed_where

    def wait_for_dispatch(self, timeout_s: float = 10.0) -> bool:
        """Block until everything written so far is dispatched (visible); False on timeout."""
        return self.reput_message_service.wait_for_dispatch(self.commit_log.max_offset, timeout_s)

    @property
    def dispatch_behind_bytes(self) -> int:
        return self.reput_message_service.behind_bytes

    @property
    def confirm_offset(self) -> int:
        """Messages below this commit log offset are dispatched and visible to consumers."""
        return self.reput_message_service.reput_from_offset
