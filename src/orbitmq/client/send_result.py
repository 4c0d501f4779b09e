"""What a send returns (RocketMQ's ``SendResult`` and ``SendStatus``)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from orbitmq.common import MessageQueue
from orbitmq.common.message_const import DEFAULT_TRACE_REGION_ID


class SendStatus(enum.Enum):
    """How far the broker got. Anything but SEND_OK still means the message is stored; the
    flush or the copy to a slave did not finish in time."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


@dataclass(frozen=True, slots=True)
class SendResult:
    """Where a message (or a batch) was stored.

    ``msg_id`` is the unique id the client gave it (UNIQ_KEY; for a batch the ids joined by
    commas), ``offset_msg_id`` the broker's id of its place in the commit log (store address
    and physical offset), ``queue_offset`` its offset in ``message_queue``'s consume queue (the
    first message's for a batch). ``recall_handle``: a delay (timer) message's handle for
    ``Producer.recall_message`` (RocketMQ 5.3), None for any other."""

    send_status: SendStatus
    msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    offset_msg_id: str
    region_id: str = DEFAULT_TRACE_REGION_ID
    trace_on: bool = True
    transaction_id: str | None = None
    recall_handle: str | None = None
