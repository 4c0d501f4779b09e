"""Retention (R18): deletes commit log files past ``fileReservedTime`` and the consume queue
and index files that only point into them.

Like RocketMQ: files older than fileReservedTime hours go at the ``deleteWhen`` hours
("04", or "04;16"), or at once when the disk holding the commit log is over
``diskMaxUsedSpaceRatio``; over ``diskSpaceCleanForciblyRatio`` even unexpired files go
(oldest first, never the file being written); over ``diskSpaceWarningLevelRatio`` writes are
refused until space returns.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable

from orbitmq.common.clock import Clock
from orbitmq.common.file_system import FileSystem
from orbitmq.common.service import Service
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue import ConsumeQueue
from orbitmq.store.message_store_config import MessageStoreConfig
from orbitmq.store.running_flags import RunningFlags

log = logging.getLogger(__name__)


class CleanCommitLogService:
    """Decides when commit log files are deleted, and deletes them."""

    def __init__(
        self,
        config: MessageStoreConfig,
        commit_log: CommitLog,
        fs: FileSystem,
        clock: Clock,
        running_flags: RunningFlags,
    ):
        self._config = config
        self._commit_log = commit_log
        self._fs = fs
        self._clock = clock
        self._running_flags = running_flags
        self._manual_delete_requests = 0
        self.clean_immediately = False

    def execute_delete_files_manually(self) -> None:
        """Delete expired files at the next runs whatever the hour (deleteExpiredCommitLog)."""
        self._manual_delete_requests = 20

    def is_time_to_delete(self) -> bool:
        hour = dt.datetime.fromtimestamp(self._clock.now_ms() / 1000).hour
        hours = {int(h) for h in self._config.delete_when.split(";") if h.strip().isdigit()}
        return hour in hours

    def is_space_to_be_full(self) -> bool:
        config = self._config
        self.clean_immediately = False
        ratio = self._fs.disk_usage_ratio(config.commit_log_dir)
        if ratio > config.disk_space_warning_level_ratio:
            limit = config.disk_space_warning_level_ratio
            reason = f"disk usage {ratio:.0%} is over diskSpaceWarningLevelRatio {limit:.0%}"
            if self._running_flags.make_disk_full(reason):
                log.error("%s: writes refused until space returns", reason)
            self.clean_immediately = True
        elif ratio > config.disk_space_clean_forcibly_ratio:
            self.clean_immediately = True
        elif self._running_flags.make_disk_ok():
            log.warning("disk usage %.0f%%: writes accepted again", ratio * 100)
        return ratio > config.disk_max_used_space_ratio / 100

    def run(self) -> int:
        """One round; returns the number of commit log files deleted."""
        config = self._config
        time_up = self.is_time_to_delete()
        space_full = self.is_space_to_be_full()
        manual = self._manual_delete_requests > 0
        if not (time_up or space_full or manual):
            return 0
        if manual:
            self._manual_delete_requests -= 1
        clean_at_once = config.clean_file_forcibly_enable and self.clean_immediately
        deleted = self._commit_log.mapped_file_queue.delete_expired_by_time(
            expired_ms=config.file_reserved_time * 3_600_000,
            now_ms=self._clock.now_ms(),
            delete_interval_ms=config.delete_commit_log_files_interval,
            clean_immediately=clean_at_once,
            batch_max=config.delete_file_batch_max,
        )
        if deleted:
            log.info(
                "retention deleted %d commit log file(s) (time up %s, space full %s, forced %s)",
                deleted,
                time_up,
                space_full,
                clean_at_once,
            )
        return deleted


class CleanResourceService(Service):
    """Runs commit log retention, then the logic cleanup, every ``cleanResourceInterval``."""

    def __init__(
        self,
        config: MessageStoreConfig,
        clean_commit_log: CleanCommitLogService,
        clean_logic: Callable[[], int],
    ):
        super().__init__()
        self._config = config
        self.clean_commit_log = clean_commit_log
        self._clean_logic = clean_logic

    def run_once(self) -> int:
        deleted = self.clean_commit_log.run()
        self._clean_logic()
        return deleted

    def run(self) -> None:
        while not self.is_stopped():
            self.wait_for_running(self._config.clean_resource_interval / 1000)
            if self.is_stopped():
                break
            try:
                self.run_once()
            except OSError:
                log.exception("retention failed; retrying next round")


def clean_expired_consume_queues(
    commit_log: CommitLog, table: dict[str, dict[int, ConsumeQueue]], keep_topics: set[str]
) -> int:
    """RocketMQ's cleanExpiredConsumerQueue (mqadmin cleanExpiredCQ): destroy each consume
    queue whose every message lies below the commit log's first offset (retention took
    them all), and drop topics left without queues; ``keep_topics`` (the schedule topic)
    are never touched. Returns how many queues were destroyed. Run it where the reput
    thread may add queues meanwhile as ``delete_topics`` runs: only emptied queues go."""
    min_phy_offset = commit_log.min_offset
    destroyed = 0
    for topic in list(table):  # list(): the reput thread may add topics meanwhile
        queues = table.get(topic)
        if topic in keep_topics or queues is None:
            continue
        for queue_id, queue in list(queues.items()):
            last_offset = queue.last_offset
            if last_offset == -1:
                continue  # no unit (a queue created just now): RocketMQ keeps it too
            # The queue's last message ends at or below the commit log's start: gone.
            if last_offset <= min_phy_offset:
                log.info(
                    "cleanExpiredConsumerQueue: %s %d destroyed, minCommitLogOffset %d, "
                    "last message ends at %d",
                    topic,
                    queue_id,
                    min_phy_offset,
                    last_offset,
                )
                commit_log.topic_queue_table.pop(f"{topic}-{queue_id}", None)
                queue.destroy()
                del queues[queue_id]
                destroyed += 1
        if not queues:
            log.info("cleanExpiredConsumerQueue: %s, topic destroyed", topic)
            del table[topic]
    return destroyed
