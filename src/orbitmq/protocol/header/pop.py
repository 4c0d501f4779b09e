"""Headers of RocketMQ 5's POP consumption (POP_MESSAGE 200050 to POLLING_INFO 200055).

The extFields keys are RocketMQ 5's (``PopMessageRequestHeader`` and its siblings). A
``queueId`` of -1 means every queue of the topic, for POP, NOTIFICATION and POLLING_INFO. The
``extraInfo`` strings that ACK and CHANGE_MESSAGE_INVISIBLETIME carry are parsed by
``orbitmq.protocol.pop_extra_info``.
"""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field

#: RocketMQ 5's broker refuses a POP for more messages than this (INVALID_PARAMETER).
POP_MAX_MSG_NUMS: Final = 32

#: RocketMQ's ConsumeInitMode, POP's initMode: where a group without an offset starts, at the
#: queue's first message (MIN) or its last (MAX; the 5.x proxy's choice).
CONSUME_INIT_MODE_MIN: Final = 0
CONSUME_INIT_MODE_MAX: Final = 1


class PopMessageRequestHeader(CommandHeader):
    """POP_MESSAGE (200050): hand out up to ``max_msg_nums`` messages of a topic (one queue, or
    all with ``queue_id`` -1) to a group, invisible to others for ``invisible_time`` ms.

    ``poll_time`` is how long (ms) the broker may hold the request when nothing is there;
    ``born_time`` when the client sent it (the broker refuses one already ``poll_time`` late);
    ``init_mode`` where a group without an offset starts (0 first, 1 last); ``exp_type`` /
    ``exp`` the filter (TAG or SQL92); ``order`` asks for FIFO POP (a queue's next messages wait
    for the previous batch); ``attempt_id`` the 5.x clients' retry id. As in RocketMQ the
    header checks no ranges; the processor answers INVALID_PARAMETER for values out of range.
    """

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    max_msg_nums: Int32 = ext_field("maxMsgNums")
    invisible_time: int = ext_field("invisibleTime")
    poll_time: int = ext_field("pollTime")
    born_time: int = ext_field("bornTime")
    init_mode: Int32 = ext_field("initMode")
    exp_type: str | None = ext_field("expType", default=None)
    exp: str | None = ext_field("exp", default=None)
    order: bool = ext_field("order", default=False)
    attempt_id: str | None = ext_field("attemptId", default=None)
    broker_name: str | None = ext_field("bname", default=None)


class PopMessageResponseHeader(CommandHeader):
    """The POP answer: when the messages were popped and for how long they are invisible,
    the revive queue of their check points (999 for FIFO POP), how many messages remain, and
    per queue the first offset read (``startOffsetInfo``), the offsets handed out
    (``msgOffsetInfo``) and, for FIFO POP, how often each was handed out (``orderCountInfo``).
    """

    pop_time: int = ext_field("popTime")
    invisible_time: int = ext_field("invisibleTime")
    revive_qid: Int32 = ext_field("reviveQid")
    rest_num: int = ext_field("restNum")
    start_offset_info: str | None = ext_field("startOffsetInfo", default=None)
    msg_offset_info: str | None = ext_field("msgOffsetInfo", default=None)
    order_count_info: str | None = ext_field("orderCountInfo", default=None)


class AckMessageRequestHeader(CommandHeader):
    """ACK_MESSAGE (200051): the consumer is done with the message at ``offset`` (queue
    offset) of ``topic`` (the message's real topic: a POP retry topic for a retried message)
    and ``queue_id``; ``extra_info`` is the message's POP_CK property as the POP answer set it.
    """

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    extra_info: str = ext_field("extraInfo")
    offset: int = ext_field("offset")
    broker_name: str | None = ext_field("bname", default=None)


class ChangeInvisibleTimeRequestHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053): make the message at ``offset`` invisible for
    ``invisible_time`` ms from now (instead of its current deadline)."""

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    extra_info: str = ext_field("extraInfo")
    offset: int = ext_field("offset")
    invisible_time: int = ext_field("invisibleTime")
    broker_name: str | None = ext_field("bname", default=None)


class ChangeInvisibleTimeResponseHeader(CommandHeader):
    """The message's new pop time and invisible time; the client builds the new extra info
    from them (``ExtraInfo.changed``)."""

    pop_time: int = ext_field("popTime")
    invisible_time: int = ext_field("invisibleTime")
    revive_qid: Int32 = ext_field("reviveQid")


class PeekMessageRequestHeader(CommandHeader):
    """PEEK_MESSAGE (200052): look at up to ``max_msg_nums`` messages of one queue from the
    group's offset on, without popping them."""

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    max_msg_nums: Int32 = ext_field("maxMsgNums")
    broker_name: str | None = ext_field("bname", default=None)


class NotificationRequestHeader(CommandHeader):
    """NOTIFICATION (200054): answer as soon as the queue (or any, with -1) has a message the
    group could pop, or after ``poll_time`` ms."""

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    poll_time: int = ext_field("pollTime")
    born_time: int = ext_field("bornTime")
    order: bool = ext_field("order", default=False)
    attempt_id: str | None = ext_field("attemptId", default=None)
    broker_name: str | None = ext_field("bname", default=None)


class NotificationResponseHeader(CommandHeader):
    """Whether there is a message; ``polling_full`` when the broker held too many polls."""

    has_msg: bool = ext_field("hasMsg")
    polling_full: bool = ext_field("pollingFull", default=False)


class PollingInfoRequestHeader(CommandHeader):
    """POLLING_INFO (200055): how many POP requests of the group are held on the queue."""

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    broker_name: str | None = ext_field("bname", default=None)


class PollingInfoResponseHeader(CommandHeader):
    """The number of POP requests held."""

    polling_num: Int32 = ext_field("pollingNum")
