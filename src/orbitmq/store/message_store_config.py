"""The store's settings, named as RocketMQ's ``MessageStoreConfig`` (in snake_case).

Every field maps one-to-one to a RocketMQ broker.conf key: ``mapped_file_size_commit_log`` is
``mappedFileSizeCommitLog``. Defaults are RocketMQ 4.9's.
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from pathlib import Path

from orbitmq.common.delay_level import DEFAULT_MESSAGE_DELAY_LEVEL


class FlushDiskType(enum.Enum):
    """How an append becomes durable: in the background, or before the send is answered."""

    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


class BrokerRole(enum.Enum):
    ASYNC_MASTER = "ASYNC_MASTER"
    SYNC_MASTER = "SYNC_MASTER"
    SLAVE = "SLAVE"


CQ_STORE_UNIT_SIZE = 20


def _default_root() -> str:
    return str(Path.home() / "store")


@dataclass(slots=True)
class MessageStoreConfig:
    """Store settings. Sizes are bytes, intervals ms, ``file_reserved_time`` hours."""

    store_path_root_dir: str = field(default_factory=_default_root)
    #: Where commit log files live; empty means ``<root>/commitlog``.
    store_path_commit_log: str = ""
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * CQ_STORE_UNIT_SIZE
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    broker_role: BrokerRole = BrokerRole.ASYNC_MASTER
    flush_interval_commit_log: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 10_000
    flush_commit_log_timed: bool = False
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 60_000
    sync_flush_timeout: int = 5000
    max_message_size: int = 4 * 1024 * 1024
    os_page_cache_busy_time_out_mills: int = 1000
    check_crc_on_recover: bool = True
    message_index_enable: bool = True
    message_index_safe: bool = False
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64
    default_query_max_num: int = 32
    file_reserved_time: int = 72
    delete_when: str = "04"
    disk_max_used_space_ratio: int = 75
    disk_space_warning_level_ratio: float = 0.90
    disk_space_clean_forcibly_ratio: float = 0.85
    clean_file_forcibly_enable: bool = True
    clean_resource_interval: int = 10_000
    delete_commit_log_files_interval: int = 100
    delete_file_batch_max: int = 10
    max_transfer_bytes_on_message_in_memory: int = 256 * 1024
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 64 * 1024
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    #: Pulls whose records are cold (further behind the commit log's end than
    #: accessMessageInMemoryMaxRatio of RAM, or not in the page cache) read them on a
    #: thread, at most this many at once; 0 reads them on the event loop. Not in RocketMQ,
    #: whose pulls all run on a pool of pullMessageThreadPoolNums threads.
    cold_read_max_in_flight: int = 4
    #: RocketMQ 5's cold data flow control: pulls of a group that read more than its
    #: cgColdReadThreshold of cold data (BrokerConfig) in 5 s are held or answered
    #: SYSTEM_BUSY (docs/operations.md, "Cold data flow control").
    cold_data_flow_control_enable: bool = False
    #: Whether "cold" asks the page cache (a mincore scan of the commit log every
    #: timerColdDataCheckIntervalMs, one page in sampleSteps kept); off, every record in the
    #: cold area (further behind the end than accessMessageInMemoryHotRatio of RAM) is cold.
    cold_data_scan_enable: bool = False
    #: Off: the commit log's mappings are advised MADV_RANDOM (no read-ahead), at start and
    #: for new files; SET_COMMITLOG_READ_MODE switches it at run time.
    data_read_ahead_enable: bool = True
    timer_cold_data_check_interval_ms: int = 60 * 1000
    sample_steps: int = 32
    #: Records further behind the commit log's end than this percentage of RAM are in the
    #: cold area (RocketMQ's checkInColdAreaByCommitOffset).
    access_message_in_memory_hot_ratio: int = 26
    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    flush_delay_offset_interval: int = 10_000
    #: How long the reput loop sleeps when the commit log has nothing new, in ms.
    reput_idle_interval: int = 1000
    #: After this many ms without a put or a read, the pages of every mapped file leave the
    #: broker's resident set (they stay in the page cache); 0 keeps them. Not in RocketMQ.
    mapped_page_release_idle_interval: int = 10_000
    #: RocketMQ's warmMapedFileEnable: new commit log and index files get every disk block
    #: when they are created (an empty store then takes 1 GiB + 420 MB). Off, as in
    #: RocketMQ, files take disk as data arrives (sparse files).
    warm_maped_file_enable: bool = False
    #: At most this many consume-queue files are open (mapped) at once; the least recently
    #: used close beyond it, and it is lowered to what half the process's open-files limit
    #: allows (each open file takes a descriptor). Not in RocketMQ, whose broker keeps
    #: every file open and needs ``ulimit -n`` raised by hand.
    max_open_consume_queue_files: int = 32_768
    #: Timer messages (RocketMQ 5's keys). Off: a message with TIMER_* properties is refused
    #: (SYSTEM_ERROR), as RocketMQ refuses it.
    timer_wheel_enable: bool = True
    #: The furthest a timer may lie ahead, in seconds (3 days).
    timer_max_delay_sec: int = 3 * 24 * 3600
    #: Width of one time-wheel slot in ms. RocketMQ's default is 1000 and it delivers up to a
    #: slot early; OrbitMQ delivers each timer at its exact time, never early, and the slot
    #: width only sets how many timers are read from disk at once. 100 by default.
    timer_precision_ms: int = 100
    #: Size of each timerlog file, 100 MiB as in RocketMQ; rounded down to whole 52-byte
    #: units (RocketMQ pads a file's tail with a blank record instead).
    mapped_file_size_timer_log: int = 100 * 1024 * 1024
    #: How often the timer log, wheel and timercheck are synced, in ms.
    timer_flush_interval_ms: int = 1000
    #: HA log shipping (docs/design/replication.md). The port slaves connect to; a broker
    #: whose broker.conf does not set it listens on listenPort + 1. 0: any free port.
    ha_listen_port: int = 10912
    #: A slave reports its offset, and an idle master sends an empty frame, this often (ms).
    ha_send_heartbeat_interval: int = 5000
    #: Either side closes an HA connection that received nothing for this long (ms).
    ha_housekeeping_interval: int = 20_000
    #: At most this many bytes of commit log per frame.
    ha_transfer_batch_size: int = 32 * 1024
    #: A slave's master HA address ("host:port"); empty: learned from the name server.
    ha_master_address: str = ""
    #: A slave this many bytes behind counts as not available (SYNC_MASTER answers
    #: SLAVE_NOT_AVAILABLE at once).
    ha_slave_fallbehind_max: int = 256 * 1024 * 1024
    #: RocketMQ 5's name for ``ha_slave_fallbehind_max``; when set it replaces it.
    ha_max_gap_not_in_sync: int | None = None
    #: A SYNC_MASTER answers a send FLUSH_SLAVE_TIMEOUT when no slave reported an offset past
    #: it within this many ms (the message stays stored and replicates later).
    slave_timeout: int = 3000

    @property
    def commit_log_dir(self) -> str:
        return self.store_path_commit_log or os.path.join(self.store_path_root_dir, "commitlog")

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "consumequeue")

    @property
    def index_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "index")

    @property
    def config_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "config")

    @property
    def abort_file(self) -> str:
        return os.path.join(self.store_path_root_dir, "abort")

    @property
    def timer_wheel_file(self) -> str:
        return os.path.join(self.store_path_root_dir, "timerwheel")

    @property
    def timer_log_dir(self) -> str:
        return os.path.join(self.store_path_root_dir, "timerlog")

    @property
    def timer_check_file(self) -> str:
        """RocketMQ's ``config/timercheck``: how far the timer store got."""
        return os.path.join(self.config_dir, "timercheck")

    @property
    def checkpoint_file(self) -> str:
        return os.path.join(self.store_path_root_dir, "checkpoint")

    def config_file(self, name: str) -> str:
        """``<root>/config/<name>.json``: topics, subscriptionGroup, consumerOffset, delayOffset."""
        return os.path.join(self.config_dir, f"{name}.json")
