"""Headers of SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE (320), and
of RECALL_MESSAGE (370, RocketMQ 5.3), which cancels a delay message sent before its time.

Code 10 carries SendMessageRequestHeader under its long key names; codes 310 and 320 carry
the same fields as SendMessageRequestHeaderV2 under one-letter keys, which saves bytes on
every send. Both classes use the same attribute names, so converting is a copy.
"""

from __future__ import annotations

from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field


class SendMessageRequestHeader(CommandHeader):
    """A producer's message: where it goes and its metadata (the body is the payload).

    ``broker_name`` (``bname``) is the broker the client addressed; newer Java clients send it.
    """

    producer_group: str = ext_field("producerGroup")
    topic: str = ext_field("topic")
    #: The topic whose configuration a new topic copies when the broker creates it on send.
    default_topic: str = ext_field("defaultTopic")
    default_topic_queue_nums: Int32 = ext_field("defaultTopicQueueNums")
    queue_id: Int32 = ext_field("queueId")
    sys_flag: Int32 = ext_field("sysFlag")
    born_timestamp: int = ext_field("bornTimestamp")
    flag: Int32 = ext_field("flag")
    #: The message properties in RocketMQ's string form (name \x01 value \x02 ...).
    properties: str | None = ext_field("properties", default=None)
    reconsume_times: Int32 | None = ext_field("reconsumeTimes", default=None)
    unit_mode: bool = ext_field("unitMode", default=False)
    batch: bool = ext_field("batch", default=False)
    max_reconsume_times: Int32 | None = ext_field("maxReconsumeTimes", default=None)
    broker_name: str | None = ext_field("bname", default=None)

    def to_v2(self) -> SendMessageRequestHeaderV2:
        return SendMessageRequestHeaderV2._filled(vars(self))


class SendMessageRequestHeaderV2(CommandHeader):
    """SendMessageRequestHeader under RocketMQ's short keys ``a`` ... ``n``."""

    producer_group: str = ext_field("a", label="producerGroup")
    topic: str = ext_field("b", label="topic")
    default_topic: str = ext_field("c", label="defaultTopic")
    default_topic_queue_nums: Int32 = ext_field("d", label="defaultTopicQueueNums")
    queue_id: Int32 = ext_field("e", label="queueId")
    sys_flag: Int32 = ext_field("f", label="sysFlag")
    born_timestamp: int = ext_field("g", label="bornTimestamp")
    flag: Int32 = ext_field("h", label="flag")
    properties: str | None = ext_field("i", default=None, label="properties")
    reconsume_times: Int32 | None = ext_field("j", default=None, label="reconsumeTimes")
    unit_mode: bool = ext_field("k", default=False, label="unitMode")
    max_reconsume_times: Int32 | None = ext_field("l", default=None, label="maxReconsumeTimes")
    batch: bool = ext_field("m", default=False, label="batch")
    broker_name: str | None = ext_field("n", default=None, label="bname")

    def to_v1(self) -> SendMessageRequestHeader:
        return SendMessageRequestHeader._filled(vars(self))


class SendMessageResponseHeader(CommandHeader):
    """Where a sent message was stored: ``msg_id`` is the offset message id (store address
    and commit log offset), ``queue_offset`` its place in the consume queue.

    RocketMQ's broker also puts MSG_REGION and TRACE_ON into the response's extFields,
    outside this header; clients read MSG_REGION.
    """

    msg_id: str = ext_field("msgId")
    queue_id: Int32 = ext_field("queueId")
    queue_offset: int = ext_field("queueOffset")
    transaction_id: str | None = ext_field("transactionId", default=None)
    #: RocketMQ 5.3: a delay (timer) message's recall handle, for RECALL_MESSAGE.
    recall_handle: str | None = ext_field("recallHandle", default=None)


class RecallMessageRequestHeader(CommandHeader):
    """Cancel the delay message a recall handle names (a send answer's ``recallHandle``)
    on ``topic``, its real topic. ``broker_name`` (``bname``): the broker addressed."""

    producer_group: str | None = ext_field("producerGroup", default=None)
    topic: str = ext_field("topic")
    recall_handle: str = ext_field("recallHandle")
    broker_name: str | None = ext_field("bname", default=None)


class RecallMessageResponseHeader(CommandHeader):
    """The recalled message's unique id (its UNIQ_KEY)."""

    msg_id: str = ext_field("msgId")
