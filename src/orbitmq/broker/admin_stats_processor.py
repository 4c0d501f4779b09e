"""``AdminStatsProcessor``: the admin requests about topics' and groups' progress, from
RocketMQ's ``AdminBrokerProcessor`` and ``Broker2Client``:

- GET_TOPIC_STATS_INFO (202): each queue's min and max offset and last store time;
- GET_CONSUME_STATS (208): a group's committed offset against each queue's max (its lag);
- INVOKE_BROKER_TO_RESET_OFFSET (222): move a group's offsets to a time, telling its online
  consumers with RESET_CONSUMER_CLIENT_OFFSET (220) over their own connections;
- DELETE_SUBSCRIPTIONGROUP (207);
- VIEW_BROKER_STATS_DATA (315): a statistic's last minute, hour and day; GROUP_GET_NUMS
  (messages a group pulled of a topic, key ``topic@group``) is the one kept here.
"""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.group_get_stats import GroupGetStats
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common import MessageQueue
from orbitmq.protocol import GROUP_GET_NUMS, RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import (
    BrokerStatsData,
    ConsumeStats,
    OffsetWrapper,
    ResetOffsetBody,
    TopicOffset,
    TopicStatsTable,
)
from orbitmq.protocol.header import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    ResetOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from orbitmq.protocol.processor_codes import ADMIN_STATS_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import MessageStore

log = logging.getLogger(__name__)


class AdminStatsProcessor(CodeDispatchingProcessor):
    """Reads offsets from the store and the managers; writes only on reset and delete.
    Event-loop confined."""

    REQUEST_CODES: Final = ADMIN_STATS_CODES

    def __init__(
        self,
        broker_name: str,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        consumer_offset_manager: ConsumerOffsetManager,
        consumer_manager: ConsumerManager,
        subscription_group_manager: SubscriptionGroupManager,
        group_get_stats: GroupGetStats,
    ) -> None:
        super().__init__(
            {
                RequestCode.GET_TOPIC_STATS_INFO: self.get_topic_stats_info,
                RequestCode.GET_CONSUME_STATS: self.get_consume_stats,
                RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.reset_offset,
                RequestCode.DELETE_SUBSCRIPTIONGROUP: self.delete_subscription_group,
                RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
            }
        )
        self.broker_name = broker_name
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.consumer_manager = consumer_manager
        self.subscription_group_manager = subscription_group_manager
        self.group_get_stats = group_get_stats

    async def get_topic_stats_info(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetTopicStatsInfoRequestHeader.from_ext_fields(request.ext_fields)
        config = self.topic_config_manager.select_topic_config(header.topic)
        if config is None:
            return RemotingCommand.create_response(
                request, ResponseCode.TOPIC_NOT_EXIST, f"topic[{header.topic}] not exist"
            )
        table = TopicStatsTable()
        for queue_id in range(config.write_queue_nums):
            low = max(0, self.store.get_min_offset_in_queue(header.topic, queue_id))
            high = max(0, self.store.get_max_offset_in_queue(header.topic, queue_id))
            stamp = (
                self.store.get_message_store_timestamp(header.topic, queue_id, high - 1)
                if high > 0
                else 0
            )
            table.offset_table[MessageQueue(header.topic, self.broker_name, queue_id)] = (
                TopicOffset(min_offset=low, max_offset=high, last_update_timestamp=stamp)
            )
        return RemotingCommand.create_success(request, body=table.to_json())

    async def get_consume_stats(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumeStatsRequestHeader.from_ext_fields(request.ext_fields)
        group = header.consumer_group
        topics = (
            {header.topic}
            if header.topic
            else self.consumer_offset_manager.which_topic_by_consumer(group)
        )
        stats = ConsumeStats()
        info = self.consumer_manager.get_consumer_group_info(group)
        for topic in sorted(topics):
            config = self.topic_config_manager.select_topic_config(topic)
            if config is None:
                log.warning("consumeStats, topic config not exist, %s", topic)
                continue
            if (
                info is not None
                and info.subscription_table
                and self.consumer_manager.find_subscription_data(group, topic) is None
            ):
                # The online group does not subscribe to this topic (any more).
                continue
            for queue_id in range(config.read_queue_nums):
                broker_offset = max(0, self.store.get_max_offset_in_queue(topic, queue_id))
                consumer_offset = max(
                    0, self.consumer_offset_manager.query_offset(group, topic, queue_id)
                )
                last = 0
                if consumer_offset > 0:
                    last = max(
                        0,
                        self.store.get_message_store_timestamp(
                            topic, queue_id, consumer_offset - 1
                        ),
                    )
                stats.offset_table[MessageQueue(topic, self.broker_name, queue_id)] = OffsetWrapper(
                    broker_offset=broker_offset,
                    consumer_offset=consumer_offset,
                    last_timestamp=last,
                )
        return RemotingCommand.create_success(request, body=stats.to_json())

    async def reset_offset(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        """Broker2Client.resetOffset: the offset of each queue at the time (its max for
        timestamp -1); kept where the group already is when that is earlier, unless forced.
        Online consumers get the table in RESET_CONSUMER_CLIENT_OFFSET and reset themselves;
        with none online the answer is CONSUMER_NOT_ONLINE and nothing changes (the admin
        tool then commits the offsets itself, as mqadmin does)."""
        header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        config = self.topic_config_manager.select_topic_config(header.topic)
        if config is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                "[reset-offset] reset offset failed, no topic in this broker. "
                f"topic={header.topic}",
            )
        table: dict[MessageQueue, int] = {}
        for queue_id in range(config.write_queue_nums):
            current = self.consumer_offset_manager.query_offset(
                header.group, header.topic, queue_id
            )
            if current == -1:
                return RemotingCommand.create_response(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    f"THe consumer group <{header.group}> not exist",
                )
            if header.timestamp == -1:
                target = self.store.get_max_offset_in_queue(header.topic, queue_id)
            else:
                target = self.store.get_offset_in_queue_by_time(
                    header.topic, queue_id, header.timestamp
                )
            target = max(0, target)
            mq = MessageQueue(header.topic, self.broker_name, queue_id)
            table[mq] = target if header.is_force or target < current else current
        info = self.consumer_manager.get_consumer_group_info(header.group)
        channels = info.all_channels() if info is not None else []
        if not channels:
            return RemotingCommand.create_response(
                request,
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {header.group} "
                f"Topic: {header.topic} Timestamp: {header.timestamp}",
            )
        notice = RemotingCommand.create_request(
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
            ResetOffsetRequestHeader(
                topic=header.topic, group=header.group, timestamp=header.timestamp, is_force=False
            ).to_ext_fields(),
            ResetOffsetBody(offset_table=table).to_json(),
        )
        for channel in channels:
            try:
                channel.invoke_oneway(notice)
            except Exception:
                log.exception("[reset-offset] notice to %s failed", channel.remote_address)
        log.info(
            "[reset-offset] %s of %s to %d: %s", header.group, header.topic, header.timestamp, table
        )
        return RemotingCommand.create_success(
            request, body=ResetOffsetBody(offset_table=table).to_json()
        )

    async def delete_subscription_group(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = DeleteSubscriptionGroupRequestHeader.from_ext_fields(request.ext_fields)
        self.subscription_group_manager.delete_subscription_group_config(header.group_name)
        if header.remove_offset:
            self.consumer_offset_manager.remove_offset(header.group_name)
        return RemotingCommand.create_success(request)

    async def view_broker_stats_data(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader.from_ext_fields(request.ext_fields)
        item = None
        if header.stats_name == GROUP_GET_NUMS:
            item = self.group_get_stats.stats_item(header.stats_key)
        if item is None:
            # RocketMQ's answer for a statistic it has no item of (nothing counted yet).
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The stats <{header.stats_name}> <{header.stats_key}> not exist",
            )
        data = BrokerStatsData(
            stats_minute=item.stats_data_in_minute(),
            stats_hour=item.stats_data_in_hour(),
            stats_day=item.stats_data_in_day(),
        )
        return RemotingCommand.create_success(request, body=data.to_json())
