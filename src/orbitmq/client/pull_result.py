"""What a pull returns (RocketMQ's ``PullResult`` and ``PullStatus``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from orbitmq.common import MessageExt


class PullStatus(enum.Enum):
    """FOUND: messages; NO_NEW_MSG: the queue has nothing past the offset; NO_MATCHED_MSG:
    messages were there but the filter took none (pull again from ``next_begin_offset``);
    OFFSET_ILLEGAL: the offset is outside the queue (start again at ``next_begin_offset``)."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclass(slots=True)
class PullResult:
    """One pull's answer. Queue offsets throughout; ``messages`` already decoded, checked
    against the subscription's tag strings and decompressed. ``broker_addr`` and
    ``broker_id`` say which broker of the queue's group served it (a slave while the master
    is down or suggested the slave); RocketMQ's PullResult does not carry them."""

    pull_status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[MessageExt] = field(default_factory=list)
    #: Which broker of the group (0 = master) to pull from next.
    suggest_which_broker_id: int = 0
    #: The address of the broker that answered.
    broker_addr: str = ""
    #: Its broker id in its group (0 = master); None when the caller did not say which id it
    #: pulled from (``PullAPIWrapper`` always does).
    broker_id: int | None = None
