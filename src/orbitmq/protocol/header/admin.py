"""Headers of the admin requests (mqadmin and the dashboard): topics, subscription groups,
consumer progress and connections, offset resets."""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field
from orbitmq.protocol.header.errors import HeaderError

#: RocketMQ's TopicFilterType names.
_TOPIC_FILTER_TYPES: Final = frozenset({"SINGLE_TAG", "MULTI_TAG"})


class CreateTopicRequestHeader(CommandHeader):
    """UPDATE_AND_CREATE_TOPIC (17): create a topic or replace its configuration.

    ``perm`` holds PermName bits (2 write, 4 read, 1 inherit); ``order`` is required on the
    wire, as in RocketMQ. ``attributes`` is RocketMQ 5's modification of the topic's
    attributes, ``+key=value,-key`` (``orbitmq.common.topic_attributes``); 4.x tools leave it
    out, which keeps the attributes the topic has.
    """

    topic: str = ext_field("topic")
    default_topic: str = ext_field("defaultTopic")
    read_queue_nums: Int32 = ext_field("readQueueNums")
    write_queue_nums: Int32 = ext_field("writeQueueNums")
    perm: Int32 = ext_field("perm")
    topic_filter_type: str = ext_field("topicFilterType")
    topic_sys_flag: Int32 | None = ext_field("topicSysFlag", default=None)
    order: bool = ext_field("order")
    attributes: str | None = ext_field("attributes", default=None)

    def check(self) -> None:
        if self.topic_filter_type not in _TOPIC_FILTER_TYPES:
            raise HeaderError(
                "topicFilterType", self.topic_filter_type, "is not SINGLE_TAG or MULTI_TAG"
            )


class DeleteTopicRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str = ext_field("topic")


class GetTopicStatsInfoRequestHeader(CommandHeader):
    """GET_TOPIC_STATS_INFO (202): each queue's min and max offset and last update time."""

    topic: str = ext_field("topic")


class QueryTopicConsumeByWhoRequestHeader(CommandHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO (300): the groups that consume ``topic``."""

    topic: str = ext_field("topic")


class GetConsumeStatsRequestHeader(CommandHeader):
    """GET_CONSUME_STATS (208): a group's progress, in one topic or all it subscribes to."""

    consumer_group: str = ext_field("consumerGroup")
    topic: str | None = ext_field("topic", default=None)


class GetConsumeStatsInBrokerHeader(CommandHeader):
    """GET_BROKER_CONSUME_STATS (317): every group's progress on this broker."""

    is_order: bool = ext_field("isOrder")


class SetCommitLogReadModeRequestHeader(CommandHeader):
    """SET_COMMITLOG_READ_MODE (2004): 0 (MADV_NORMAL, read-ahead) or 1 (MADV_RANDOM).
    RocketMQ sends the key bare (``FIleReadaheadMode.READ_AHEAD_MODE``), no header class."""

    read_ahead_mode: Int32 = ext_field("READ_AHEAD_MODE")


class QueryConsumeTimeSpanRequestHeader(CommandHeader):
    """QUERY_CONSUME_TIME_SPAN (303): per queue, the store times a group has reached."""

    topic: str = ext_field("topic")
    group: str = ext_field("group")


class GetConsumerConnectionListRequestHeader(CommandHeader):
    """GET_CONSUMER_CONNECTION_LIST (203): a group's clients and subscriptions."""

    consumer_group: str = ext_field("consumerGroup")


class GetProducerConnectionListRequestHeader(CommandHeader):
    """GET_PRODUCER_CONNECTION_LIST (204)."""

    producer_group: str = ext_field("producerGroup")


class DeleteSubscriptionGroupRequestHeader(CommandHeader):
    """DELETE_SUBSCRIPTIONGROUP (207); ``remove_offset`` drops its committed offsets too."""

    group_name: str = ext_field("groupName")
    remove_offset: bool = ext_field("removeOffset", default=False)


class ResetOffsetRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (222) and, broker to client, RESET_CONSUMER_CLIENT_OFFSET
    (220): move a group's offsets in ``topic`` to the first message stored at or after
    ``timestamp`` (epoch milliseconds). Without ``is_force`` an offset only moves back."""

    topic: str = ext_field("topic")
    group: str = ext_field("group")
    timestamp: int = ext_field("timestamp")
    is_force: bool = ext_field("isForce")


class GetConsumerStatusRequestHeader(CommandHeader):
    """INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and GET_CONSUMER_STATUS_FROM_CLIENT (221):
    the offsets a group's clients hold for ``topic``; ``client_addr`` picks one client."""

    topic: str = ext_field("topic")
    group: str = ext_field("group")
    client_addr: str | None = ext_field("clientAddr", default=None)


class GetConsumerRunningInfoRequestHeader(CommandHeader):
    """GET_CONSUMER_RUNNING_INFO (307), relayed by the broker to one client of a group."""

    consumer_group: str = ext_field("consumerGroup")
    client_id: str = ext_field("clientId")
    jstack_enable: bool = ext_field("jstackEnable", default=False)


class GetBrokerConfigResponseHeader(CommandHeader):
    """The answer to GET_BROKER_CONFIG (26): the config's data version (JSON); the body holds
    the properties."""

    version: str = ext_field("version")


class ConsumeMessageDirectlyResultRequestHeader(CommandHeader):
    """CONSUME_MESSAGE_DIRECTLY (309): hand the message ``msg_id`` to one client of a group;
    the broker adds ``brokerName`` and the message itself before relaying it."""

    consumer_group: str = ext_field("consumerGroup")
    client_id: str | None = ext_field("clientId", default=None)
    msg_id: str | None = ext_field("msgId", default=None)
    broker_name: str | None = ext_field("brokerName", default=None)


class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA (315): one counter of the broker's stats, by its name
    (TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...) and key (a topic, ``topic@group``, the cluster)."""

    stats_name: str = ext_field("statsName")
    stats_key: str = ext_field("statsKey")


class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (321): ``count`` consume-queue units of a queue from ``index``;
    with ``consumer_group``, also how that group's subscription filters them."""

    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    index: int = ext_field("index")
    count: Int32 = ext_field("count")
    consumer_group: str | None = ext_field("consumerGroup", default=None)
