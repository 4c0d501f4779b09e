"""``AdminRuntimeProcessor``: the broker-wide admin requests of RocketMQ's
``AdminBrokerProcessor`` behind mqadmin's broker commands:

- UPDATE_BROKER_CONFIG (25), GET_BROKER_CONFIG (26): the settings as properties text, changed
  at run time and saved in the broker's config file (``BrokerConfiguration``);
- GET_BROKER_RUNTIME_INFO (28): brokerStatus's table (``BrokerRuntimeInfo``);
- VIEW_BROKER_STATS_DATA (315): one counter of the ``BrokerStatsManager`` (statsAll);
- GET_BROKER_CONSUME_STATS (317): every group's progress and the summed lag
  (brokerConsumeStats);
- CLEAN_EXPIRED_CONSUMEQUEUE (306): drop consume queues retention emptied (cleanExpiredCQ);
- QUERY_CONSUME_QUEUE (321): the raw units of a consume queue (queryCq).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

import orjson

from orbitmq.broker.broker_configuration import BrokerConfiguration
from orbitmq.broker.broker_runtime_info import BrokerRuntimeInfo
from orbitmq.broker.broker_stats_manager import BrokerStatsManager, StatsSnapshot
from orbitmq.broker.consumer_filter_manager import ConsumerFilterManager
from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common import MessageQueue
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties
from orbitmq.common.topic import RMQ_SYS_SCHEDULE_TOPIC
from orbitmq.filter import SubscriptionData as FilterSubscription
from orbitmq.filter import is_tag_type
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import (
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeQueueData,
    ConsumeStats,
    ConsumeStatsList,
    KVTable,
    OffsetWrapper,
    QueryConsumeQueueResponseBody,
    SubscriptionData,
)
from orbitmq.protocol.header import (
    GetBrokerConfigResponseHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from orbitmq.protocol.processor_codes import ADMIN_RUNTIME_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import MessageStore, clean_expired_consume_queues

log = logging.getLogger(__name__)

#: RocketMQ 4.9.8's remark for a black-listed key.
BLACK_LIST_REMARK: Final = "Can not update config in black list."


def _stats_item(snapshot: StatsSnapshot) -> BrokerStatsItem:
    return BrokerStatsItem(sum=snapshot.sum, tps=snapshot.tps, avgpt=snapshot.avgpt)


class AdminRuntimeProcessor(CodeDispatchingProcessor):
    """Reads the managers, the store and the stats; writes only the config (one update at a
    time, under an asyncio lock, the file written in a worker thread) and, on cleaning, the
    consume-queue table. Event-loop confined.

    ``on_permission_changed`` is called after an update of brokerPermission, so the broker
    registers again at once with the name servers (RocketMQ's registerBrokerAll).
    """

    REQUEST_CODES: Final = ADMIN_RUNTIME_CODES

    def __init__(
        self,
        configuration: BrokerConfiguration,
        runtime_info: BrokerRuntimeInfo,
        stats: BrokerStatsManager,
        store: MessageStore,
        managers: tuple[
            TopicConfigManager, SubscriptionGroupManager, ConsumerOffsetManager, ConsumerManager
        ],
        consumer_filter_manager: ConsumerFilterManager,
        broker_addr: Callable[[], str],
        *,
        on_permission_changed: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(
            {
                RequestCode.UPDATE_BROKER_CONFIG: self.update_broker_config,
                RequestCode.GET_BROKER_CONFIG: self.get_broker_config,
                RequestCode.GET_BROKER_RUNTIME_INFO: self.get_broker_runtime_info,
                RequestCode.VIEW_BROKER_STATS_DATA: self.view_broker_stats_data,
                RequestCode.GET_BROKER_CONSUME_STATS: self.get_broker_consume_stats,
                RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.clean_expired_consume_queue,
                RequestCode.QUERY_CONSUME_QUEUE: self.query_consume_queue,
            }
        )
        self.configuration = configuration
        self.runtime_info = runtime_info
        self.stats = stats
        self.store = store
        (
            self.topic_config_manager,
            self.subscription_group_manager,
            self.consumer_offset_manager,
            self.consumer_manager,
        ) = managers
        self.consumer_filter_manager = consumer_filter_manager
        self.broker_addr = broker_addr
        self.on_permission_changed = on_permission_changed
        self._update_lock = asyncio.Lock()

    # -- config ----------------------------------------------------------------------------

    async def update_broker_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        log.info("updateBrokerConfig called by %s", ctx.remote_address)
        if not request.body:
            return RemotingCommand.create_success(request)
        properties = parse_properties(bytes(request.body).decode("utf-8"))
        refused = self.configuration.black_listed(properties)
        if refused:
            log.warning("updateBrokerConfig refused, black-listed keys: %s", ", ".join(refused))
            return RemotingCommand.create_response(
                request, ResponseCode.NO_PERMISSION, BLACK_LIST_REMARK
            )
        log.info("updateBrokerConfig, new config: %s client: %s", properties, ctx.remote_address)
        try:
            async with self._update_lock:
                update = await asyncio.to_thread(self.configuration.update, properties)
        except ConfigError as exc:
            return RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
        except OSError as exc:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, f"config applied but not saved: {exc}"
            )
        if "brokerPermission" in update.applied:
            self.topic_config_manager.data_version.next_version(
                self.configuration.data_version.timestamp
            )
            if self.on_permission_changed is not None:
                self.on_permission_changed()
        remark = None
        if update.on_restart:
            remark = f"saved; takes effect at the next start: {', '.join(update.on_restart)}"
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS, remark)

    async def get_broker_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetBrokerConfigResponseHeader(version=self.configuration.data_version_json())
        body = self.configuration.all_configs_text().encode("utf-8")
        return RemotingCommand.create_success(request, header=header, body=body)

    async def get_broker_runtime_info(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        table = KVTable(table=self.runtime_info.prepare())
        return RemotingCommand.create_success(request, body=table.to_json())

    # -- stats -----------------------------------------------------------------------------

    async def view_broker_stats_data(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = ViewBrokerStatsDataRequestHeader.from_ext_fields(request.ext_fields)
        item = self.stats.get_stats_item(header.stats_name, header.stats_key)
        if item is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The stats <{header.stats_name}> <{header.stats_key}> not exist",
            )
        data = BrokerStatsData(
            stats_minute=_stats_item(item.stats_data_in_minute()),
            stats_hour=_stats_item(item.stats_data_in_hour()),
            stats_day=_stats_item(item.stats_data_in_day()),
        )
        return RemotingCommand.create_success(request, body=data.to_json())

    async def get_broker_consume_stats(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        """RocketMQ's fetchAllConsumeStatsInBroker: each subscription group's progress in
        each topic it has offsets in (only order topics with ``isOrder``; a topic an online
        group no longer subscribes to is left out), over every write queue."""
        header = GetConsumeStatsInBrokerHeader.from_ext_fields(request.ext_fields)
        result = ConsumeStatsList(broker_addr=self.broker_addr())
        for group in sorted(self.subscription_group_manager.group_names()):
            per_topic = [
                stats
                for topic in sorted(self.consumer_offset_manager.which_topic_by_consumer(group))
                if (stats := self._consume_stats(group, topic, header.is_order)) is not None
            ]
            result.total_diff += sum(stats.total_diff() for stats in per_topic)
            result.consume_stats_list.append({group: per_topic})
        return RemotingCommand.create_success(request, body=result.to_json())

    def _consume_stats(self, group: str, topic: str, is_order: bool) -> ConsumeStats | None:
        config = self.topic_config_manager.select_topic_config(topic)
        if config is None:
            log.warning("consumeStats, topic config not exist, %s", topic)
            return None
        if is_order and not config.order:
            return None
        info = self.consumer_manager.get_consumer_group_info(group)
        if (
            info is not None
            and info.subscription_table
            and self.consumer_manager.find_subscription_data(group, topic) is None
        ):
            log.warning("consumeStats, the consumer group[%s], topic[%s] not exist", group, topic)
            return None
        stats = ConsumeStats(consume_tps=self.stats.tps_group_get_nums(group, topic))
        broker_name = self.configuration.broker_config.broker_name
        for queue_id in range(config.write_queue_nums):
            broker_offset = max(0, self.store.get_max_offset_in_queue(topic, queue_id))
            consumer_offset = max(
                0, self.consumer_offset_manager.query_offset(group, topic, queue_id)
            )
            last = 0
            if consumer_offset > 0:
                last = max(
                    0, self.store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
                )
            stats.offset_table[MessageQueue(topic, broker_name, queue_id)] = OffsetWrapper(
                broker_offset=broker_offset, consumer_offset=consumer_offset, last_timestamp=last
            )
        return stats

    # -- consume queues --------------------------------------------------------------------

    async def clean_expired_consume_queue(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        log.warning("invoke cleanExpiredConsumeQueue start, by %s", ctx.remote_address)
        store = self.store
        destroyed = await asyncio.to_thread(
            clean_expired_consume_queues,
            store.commit_log,
            store.consume_queue_table,
            {RMQ_SYS_SCHEDULE_TOPIC},
        )
        log.warning("invoke cleanExpiredConsumeQueue end, %d queues destroyed", destroyed)
        return RemotingCommand.create_success(request)

    async def query_consume_queue(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = QueryConsumeQueueRequestHeader.from_ext_fields(request.ext_fields)
        queue = self.store.find_consume_queue(header.topic, header.queue_id)
        if queue is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"{header.queue_id}@{header.topic} is not exist!",
            )
        body = QueryConsumeQueueResponseBody(
            max_queue_index=queue.max_offset_in_queue, min_queue_index=queue.min_offset_in_queue
        )
        subscription = self._subscription(header, body)
        if queue.read_unit(header.index) is None:
            # RocketMQ answers this with no body, on which mqadmin fails; the queue's range
            # tells the operator where the units are.
            response = RemotingCommand.create_response(
                request,
                ResponseCode.SUCCESS,
                f"Index {header.index} of {header.queue_id}@{header.topic} is not exist!",
            )
            response.body = body.to_json()
            return response
        units = []
        for index in range(header.index, header.index + max(0, header.count)):
            read = queue.read_unit(index)
            if read is None:
                break
            unit = ConsumeQueueData(physic_offset=read[0], physic_size=read[1], tags_code=read[2])
            if subscription is not None:
                unit.eval = _tag_matches(subscription, read[2])
            units.append(unit)
        body.queue_data = units
        return RemotingCommand.create_success(request, body=body.to_json())

    def _subscription(
        self, header: QueryConsumeQueueRequestHeader, body: QueryConsumeQueueResponseBody
    ) -> FilterSubscription | None:
        """The named group's subscription of the topic into ``body`` (RocketMQ's filterData
        is the group's SQL92 filter, "null" without one)."""
        group = header.consumer_group
        if group is None:
            return None
        subscription = self.consumer_manager.find_subscription_data(group, header.topic)
        if subscription is None:
            body.filter_data = f"{group}@{header.topic} is not online!"
            return None
        body.subscription_data = SubscriptionData(
            topic=subscription.topic,
            sub_string=subscription.sub_string,
            tags_set=set(subscription.tags_set),
            code_set=set(subscription.code_set),
            sub_version=subscription.sub_version,
            expression_type=subscription.expression_type,
        )
        data = self.consumer_filter_manager.get(header.topic, group)
        filter_value = None
        if data is not None:
            filter_value = {
                "consumerGroup": data.consumer_group,
                "topic": data.topic,
                "expression": data.expression,
                "expressionType": data.expression_type,
                "clientVersion": data.client_version,
            }
        body.filter_data = orjson.dumps(filter_value, option=orjson.OPT_INDENT_2).decode()
        return subscription


def _tag_matches(subscription: FilterSubscription, tags_code: int) -> bool:
    """Whether a unit passes a TAG subscription by its tag hash code ("*" takes all); an
    SQL92 subscription needs the message's properties, so RocketMQ's ``eval`` stays false."""
    if not is_tag_type(subscription.expression_type):
        return False
    return subscription.is_sub_all or tags_code in subscription.code_set
