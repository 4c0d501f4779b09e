"""Outcomes of reads: GetMessageStatus / GetMessageResult and QueryMessageResult."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field


class GetMessageStatus(enum.Enum):
    FOUND = enum.auto()
    NO_MATCHED_MESSAGE = enum.auto()
    MESSAGE_WAS_REMOVING = enum.auto()
    OFFSET_FOUND_NULL = enum.auto()
    OFFSET_OVERFLOW_BADLY = enum.auto()
    OFFSET_OVERFLOW_ONE = enum.auto()
    OFFSET_TOO_SMALL = enum.auto()
    NO_MATCHED_LOGIC_QUEUE = enum.auto()
    NO_MESSAGE_IN_QUEUE = enum.auto()

    #: Members are singletons: identity hashing is exact and runs in C (Enum's own hashes
    #: the name in Python, on every pull's status lookups).
    __hash__ = object.__hash__


#: (commit log offsets, sizes) of a read's records -> how many of their bytes are cold
#: (``ColdDataCheckService.cold_bytes``): the read's coldDataSum.
ColdBytes = Callable[[Sequence[int], Sequence[int]], int]


@dataclass(slots=True)
class GetMessageResult:
    """Messages read from one queue: zero-copy views of their stored records.

    ``message_buffers[i]`` is the whole record of the message at ``message_queue_offsets[i]``.
    The views stay valid even if retention deletes the file meanwhile.
    """

    status: GetMessageStatus
    next_begin_offset: int = 0
    min_offset: int = 0
    max_offset: int = 0
    message_buffers: list[memoryview] = field(default_factory=list)
    message_queue_offsets: list[int] = field(default_factory=list)
    buffer_total_size: int = 0
    suggest_pulling_from_slave: bool = False
    #: Records skipped because the filter did not match.
    filtered_count: int = 0
    #: Set when the records are cold (on disk by accessMessageInMemoryMaxRatio, or not in
    #: the page cache): their commit log offsets, one per buffer. Touching such views may
    #: block on the disk, so a server loads them on a thread first (``ColdReader``).
    cold_offsets: list[int] | None = None
    #: Bytes of the records that are cold by the cold data flow control's rule (RocketMQ's
    #: coldDataSum): counted only while coldDataFlowControlEnable is on and a
    #: ``ColdDataCheckService`` counts for the commit log (``CommitLog.cold_bytes``).
    cold_data_sum: int = 0

    @property
    def message_count(self) -> int:
        return len(self.message_buffers)

    def body(self) -> bytes:
        """All records back to back, as a pull response body carries them."""
        return b"".join(self.message_buffers)


@dataclass(slots=True)
class QueryMessageResult:
    """Messages found through the index: their records and the index's last update time."""

    message_buffers: list[memoryview] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phy_offset: int = 0
    buffer_total_size: int = 0
