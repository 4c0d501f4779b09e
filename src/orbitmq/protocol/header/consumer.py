"""Headers of a consumer's dealings with the broker: group membership, committed offsets and
messages sent back for retry."""

from __future__ import annotations

from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field


class GetConsumerListByGroupRequestHeader(CommandHeader):
    """GET_CONSUMER_LIST_BY_GROUP (38); the answer's body lists the client ids."""

    consumer_group: str = ext_field("consumerGroup")


class NotifyConsumerIdsChangedRequestHeader(CommandHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), sent by the broker to a group's consumers."""

    consumer_group: str = ext_field("consumerGroup")


class UnregisterClientRequestHeader(CommandHeader):
    """UNREGISTER_CLIENT (35): one client leaves a producer group or a consumer group."""

    client_id: str = ext_field("clientID")
    producer_group: str | None = ext_field("producerGroup", default=None)
    consumer_group: str | None = ext_field("consumerGroup", default=None)


class QueryConsumerOffsetRequestHeader(CommandHeader):
    """QUERY_CONSUMER_OFFSET (14): a group's committed offset in one queue."""

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    broker_name: str | None = ext_field("bname", default=None)


class QueryConsumerOffsetResponseHeader(CommandHeader):
    """The committed queue offset."""

    offset: int = ext_field("offset")


class UpdateConsumerOffsetRequestHeader(CommandHeader):
    """UPDATE_CONSUMER_OFFSET (15): commit a group's queue offset."""

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    commit_offset: int = ext_field("commitOffset")
    broker_name: str | None = ext_field("bname", default=None)


class ConsumerSendMsgBackRequestHeader(CommandHeader):
    """CONSUMER_SEND_MSG_BACK (36): a message the consumer failed to consume, for retry.

    ``offset`` is the message's commit log (physical) offset; ``delay_level`` 0 lets the
    broker choose (3 + reconsume times), below 0 sends it straight to the dead letter queue.
    """

    offset: int = ext_field("offset")
    group: str = ext_field("group")
    delay_level: Int32 = ext_field("delayLevel")
    origin_msg_id: str | None = ext_field("originMsgId", default=None)
    origin_topic: str | None = ext_field("originTopic", default=None)
    unit_mode: bool = ext_field("unitMode", default=False)
    max_reconsume_times: Int32 | None = ext_field("maxReconsumeTimes", default=None)
    broker_name: str | None = ext_field("bname", default=None)
