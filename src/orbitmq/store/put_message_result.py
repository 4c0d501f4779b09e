"""Outcomes of an append: PutMessageStatus / PutMessageResult, as RocketMQ names them."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from orbitmq.common.message_id import create_message_id


class PutMessageStatus(enum.Enum):
    PUT_OK = enum.auto()
    FLUSH_DISK_TIMEOUT = enum.auto()
    FLUSH_SLAVE_TIMEOUT = enum.auto()
    SLAVE_NOT_AVAILABLE = enum.auto()
    SERVICE_NOT_AVAILABLE = enum.auto()
    CREATE_MAPPED_FILE_FAILED = enum.auto()
    MESSAGE_ILLEGAL = enum.auto()
    PROPERTIES_SIZE_EXCEEDED = enum.auto()
    OS_PAGE_CACHE_BUSY = enum.auto()
    UNKNOWN_ERROR = enum.auto()
    #: A timer message whose time is not a number or lies beyond timerMaxDelaySec.
    WHEEL_TIMER_MSG_ILLEGAL = enum.auto()
    #: A timer message while timerWheelEnable is false.
    WHEEL_TIMER_NOT_ENABLE = enum.auto()

    #: Members are singletons: identity hashing is exact and runs in C (Enum's own hashes
    #: the name in Python, on every lookup of the send path's status tables).
    __hash__ = object.__hash__

    @property
    def is_ok(self) -> bool:
        """Stored: PUT_OK, or stored but not yet durable/replicated as asked."""
        return self in _STORED


_STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


class AppendMessageStatus(enum.Enum):
    PUT_OK = enum.auto()
    END_OF_FILE = enum.auto()
    MESSAGE_SIZE_EXCEEDED = enum.auto()
    PROPERTIES_SIZE_EXCEEDED = enum.auto()
    UNKNOWN_ERROR = enum.auto()


@dataclass(slots=True)
class AppendMessageResult:
    """Where an append landed. For a batch: the first record's offsets and the totals."""

    status: AppendMessageStatus
    wrote_offset: int = 0
    wrote_bytes: int = 0
    store_timestamp: int = 0
    #: Queue offset of the (first) message.
    logics_offset: int = 0
    msg_num: int = 1
    #: Time spent holding the put lock, in ms.
    elapsed_ms: float = 0.0
    #: Physical offset of every record written (one for a single message).
    record_offsets: list[int] = field(default_factory=list)
    store_host_bytes: bytes = b""

    @property
    def msg_id(self) -> str:
        """Offset message id(s); for a batch comma-separated, as RocketMQ answers."""
        return ",".join(create_message_id(self.store_host_bytes, o) for o in self.record_offsets)


@dataclass(slots=True)
class PutMessageResult:
    """The status of a put, the append's details when it was stored, and a reason if not."""

    status: PutMessageStatus
    append_result: AppendMessageResult | None = None
    #: Why the put failed, naming the field, the value and the limit.
    remark: str = ""

    @property
    def is_ok(self) -> bool:
        return self.status.is_ok
