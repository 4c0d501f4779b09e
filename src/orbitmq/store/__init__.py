"""The storage engine: CommitLog, ConsumeQueue, IndexFile, flush, dispatch, recovery and
retention, behind MessageStore. No sockets: the broker drives it."""

from orbitmq.store.clean_service import clean_expired_consume_queues
from orbitmq.store.cold_data_check_service import ColdDataCheckService
from orbitmq.store.cold_reader import ColdReader
from orbitmq.store.commit_log import CommitLog
from orbitmq.store.consume_queue import ConsumeQueue
from orbitmq.store.dispatch_batch import DispatchBatch, ParsedRecords, parse_records
from orbitmq.store.errors import StoreError
from orbitmq.store.get_message_result import GetMessageResult, GetMessageStatus, QueryMessageResult
from orbitmq.store.ha import HAClient, HAService
from orbitmq.store.ha.ha_codec import MAX_FRAME_BODY_SIZE
from orbitmq.store.index_file import IndexFile
from orbitmq.store.index_service import IndexService
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.mapped_file_queue import MappedFileQueue
from orbitmq.store.message_filter import MessageFilter
from orbitmq.store.message_store import MessageStore
from orbitmq.store.message_store_config import (
    CQ_STORE_UNIT_SIZE,
    BrokerRole,
    FlushDiskType,
    MessageStoreConfig,
)
from orbitmq.store.put_message_result import (
    AppendMessageResult,
    AppendMessageStatus,
    PutMessageResult,
    PutMessageStatus,
)
from orbitmq.store.put_wait import GroupCommitRequest, PutWait, PutWaiters
from orbitmq.store.recovery import RecoveryReport
from orbitmq.store.reput_message_service import MessageArrivingListener
from orbitmq.store.store_checkpoint import StoreCheckpoint
from orbitmq.store.store_lock import StoreLock, StoreLockedError, store_holder_pid
from orbitmq.store.timer import TimerMessageStore, build_delete_key

__all__ = [
    "CQ_STORE_UNIT_SIZE",
    "MAX_FRAME_BODY_SIZE",
    "AppendMessageResult",
    "AppendMessageStatus",
    "BrokerRole",
    "ColdDataCheckService",
    "ColdReader",
    "CommitLog",
    "ConsumeQueue",
    "DispatchBatch",
    "FlushDiskType",
    "GetMessageResult",
    "GetMessageStatus",
    "GroupCommitRequest",
    "HAClient",
    "HAService",
    "IndexFile",
    "IndexService",
    "MappedFile",
    "MappedFileQueue",
    "MessageArrivingListener",
    "MessageFilter",
    "MessageStore",
    "MessageStoreConfig",
    "ParsedRecords",
    "PutMessageResult",
    "PutMessageStatus",
    "PutWait",
    "PutWaiters",
    "QueryMessageResult",
    "RecoveryReport",
    "StoreCheckpoint",
    "StoreError",
    "StoreLock",
    "StoreLockedError",
    "TimerMessageStore",
    "build_delete_key",
    "clean_expired_consume_queues",
    "parse_records",
    "store_holder_pid",
]
