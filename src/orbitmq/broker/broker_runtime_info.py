"""``BrokerRuntimeInfo``: GET_BROKER_RUNTIME_INFO (28)'s table, with the keys RocketMQ 4.9's
``AdminBrokerProcessor.prepareRuntimeInfo``, ``DefaultMessageStore.getRuntimeInfo`` and
``StoreStatsService.getRuntimeInfo`` report (what mqadmin brokerStatus prints).

Values are strings formatted as RocketMQ formats them. Where OrbitMQ has no counterpart the
value says so plainly: the request executors have no queue head to time (their
``...HeadWaitTimeMills`` are 0), END_TRANSACTION shares the send executor (its queue keys
report that executor), there is no transient store pool (``remainTransientStoreBufferNumbs``
is Java's Integer.MAX_VALUE, as RocketMQ reports with the pool off), and
``startAcceptSendRequestTimeStamp`` is RocketMQ's default 0.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Callable, Mapping
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.store_stats_service import StoreStatsService
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from orbitmq.protocol import CURRENT_VERSION
from orbitmq.remoting import RequestExecutor
from orbitmq.store import MessageStore

#: RocketMQ 4.9.8's MQVersion.getVersionDesc(CURRENT_VERSION).
BROKER_VERSION_DESC: Final = "V4_9_8"
_JAVA_INT_MAX: Final = 2**31 - 1
_TOTAL_SIZE: Final = struct.Struct(">i")


def human_readable_byte_count(count: int) -> str:
    """Java's MixAll.humanReadableByteCount(bytes, false): "512 B", "1.5 KiB"."""
    if count < 1024:
        return f"{count} B"
    exp = 0
    value = float(count)
    while value >= 1024 and exp < 6:
        value /= 1024
        exp += 1
    return f"{value:.1f} {'KMGTPE'[exp - 1]}iB"


class BrokerRuntimeInfo:
    """Reads the store, the stats service and the request executors; owns nothing.
    Call from the broker's event loop."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        store_stats: StoreStatsService,
        executors: Mapping[str, RequestExecutor],
        *,
        schedule_offsets: Callable[[], Mapping[int, int]] = dict,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``executors`` by RocketMQ's pool name: "send", "pull", "query"."""
        self.broker_config = broker_config
        self.store = store
        self.store_stats = store_stats
        self.executors = executors
        self.schedule_offsets = schedule_offsets
        self._clock = clock

    def prepare(self) -> dict[str, str]:
        """Every key, as RocketMQ's prepareRuntimeInfo gathers them."""
        info = self._store_stats_info()
        info.update(self._store_info())
        info.update(self._broker_info())
        return info

    def _store_stats_info(self) -> dict[str, str]:
        """StoreStatsService.getRuntimeInfo."""
        stats = self.store_stats
        total = stats.put_times_total or 1  # RocketMQ divides by at least one
        return {
            "bootTimestamp": str(stats.boot_timestamp),
            "runtime": stats.runtime_text(),
            "putMessageEntireTimeMax": str(stats.put_entire_time_max_ms),
            "putMessageTimesTotal": str(total),
            "putMessageFailedTimes": str(stats.put_failed_times),
            "putMessageSizeTotal": str(stats.put_size_total),
            "putMessageDistributeTime": stats.distribution_text(),
            "putMessageAverageSize": repr(stats.put_size_total / total),
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": str(stats.get_entire_time_max_ms),
            "putTps": stats.tps_text(1),
            "getFoundTps": stats.tps_text(2),
            "getMissTps": stats.tps_text(3),
            "getTotalTps": stats.get_total_tps_text(),
            "getTransferedTps": stats.tps_text(4),
            "putLatency99": f"{stats.put_latency(0.99):.2f}",
            "putLatency999": f"{stats.put_latency(0.999):.2f}",
        }

    def _store_info(self) -> dict[str, str]:
        """DefaultMessageStore.getRuntimeInfo: disk use, delay levels, commit log range."""
        store = self.store
        config = store.config
        info: dict[str, str] = {}
        commit_log_ratio = _disk_ratio(store, config.commit_log_dir)
        info[f"commitLogDiskRatio_{config.commit_log_dir}"] = repr(commit_log_ratio)
        info["commitLogDiskRatio"] = repr(commit_log_ratio)
        info["consumeQueueDiskRatio"] = repr(_disk_ratio(store, config.consume_queue_dir))
        for level, offset in sorted(self.schedule_offsets().items()):
            end = store.get_max_offset_in_queue(RMQ_SYS_SCHEDULE_TOPIC, level - 1)
            info[f"scheduleMessageOffset_{level}"] = f"{offset},{end}"
        info["commitLogMinOffset"] = str(store.min_phy_offset)
        info["commitLogMaxOffset"] = str(store.max_phy_offset)
        return info

    def _broker_info(self) -> dict[str, str]:
        """AdminBrokerProcessor.prepareRuntimeInfo's own keys."""
        stats, config, store = self.store_stats, self.broker_config, self.store
        put_yesterday, get_yesterday = stats.msg_totals_yesterday_morning
        put_today, get_today = stats.msg_totals_today_morning
        send, pull, query = self.executors["send"], self.executors["pull"], self.executors["query"]
        begin = store.commit_log.begin_time_in_lock
        info = {
            "brokerVersionDesc": BROKER_VERSION_DESC,
            "brokerVersion": str(CURRENT_VERSION),
            "msgPutTotalYesterdayMorning": str(put_yesterday),
            "msgPutTotalTodayMorning": str(put_today),
            "msgPutTotalTodayNow": str(stats.put_times_total),
            "msgGetTotalYesterdayMorning": str(get_yesterday),
            "msgGetTotalTodayMorning": str(get_today),
            "msgGetTotalTodayNow": str(stats.get_transferred),
            "sendThreadPoolQueueSize": str(send.admitted),
            "sendThreadPoolQueueCapacity": str(config.send_thread_pool_queue_capacity),
            "pullThreadPoolQueueSize": str(pull.admitted),
            "pullThreadPoolQueueCapacity": str(config.pull_thread_pool_queue_capacity),
            "queryThreadPoolQueueSize": str(query.admitted),
            "queryThreadPoolQueueCapacity": str(config.query_thread_pool_queue_capacity),
            "EndTransactionQueueSize": str(send.admitted),
            "EndTransactionThreadPoolQueueCapacity": str(config.send_thread_pool_queue_capacity),
            "dispatchBehindBytes": str(store.dispatch_behind_bytes),
            "pageCacheLockTimeMills": str(self._clock.now_ms() - begin if begin > 0 else 0),
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "earliestMessageTimeStamp": str(self._earliest_message_time()),
            "startAcceptSendRequestTimeStamp": "0",
            "remainTransientStoreBufferNumbs": str(_JAVA_INT_MAX),
            "remainHowManyDataToFlush": human_readable_byte_count(
                max(0, store.max_phy_offset - store.flushed_phy_offset)
            ),
        }
        try:
            usage = shutil.disk_usage(store.config.store_path_root_dir)
        except OSError:
            return info
        info["commitLogDirCapacity"] = (
            f"Total : {human_readable_byte_count(usage.total)}, "
            f"Free : {human_readable_byte_count(usage.free)}."
        )
        return info

    def _earliest_message_time(self) -> int:
        """The store time of the commit log's first message; -1 without one."""
        commit_log = self.store.commit_log
        offset = commit_log.min_offset
        head = commit_log.get_message(offset, _TOTAL_SIZE.size)
        if head is None or len(head) < _TOTAL_SIZE.size:
            return -1
        size = _TOTAL_SIZE.unpack_from(head)[0]
        return commit_log.pickup_store_timestamp(offset, size) if size > 0 else -1


def _disk_ratio(store: MessageStore, path: str) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: the used share, -1 when unknown."""
    try:
        return store.fs.disk_usage_ratio(path)
    except OSError:
        return -1.0
