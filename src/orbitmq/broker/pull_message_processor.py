"""``PullMessageProcessor``: PULL_MESSAGE (11) — read a queue from an offset through a tag
filter, commit the offset the pull carries, and hold pulls that found nothing (RocketMQ's
``PullMessageProcessor``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final, Protocol

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.broker_stats_manager import BrokerStatsManager
from orbitmq.broker.cold_data_flow_control import ColdDataFlowControl
from orbitmq.broker.cold_data_pull_request_hold_service import NO_SUSPEND_KEY
from orbitmq.broker.consumer_filter_manager import (
    ConsumerFilterData,
    ConsumerFilterManager,
    build_consumer_filter_data,
)
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.metrics import MessageCounters
from orbitmq.broker.pull_request_hold_service import PullRequest, PullRequestHoldService
from orbitmq.broker.store_stats_service import StoreStatsService
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common import MessageExtBrokerInner, MessageQueue, message_properties_to_string
from orbitmq.common import message_const as mc
from orbitmq.common.topic import RMQ_SYS_OFFSET_MOVED_EVENT
from orbitmq.filter import (
    RetrySql92MessageFilter,
    Sql92MessageFilter,
    SubscriptionData,
    SubscriptionParseError,
    TagMessageFilter,
    build_subscription,
    is_retry_topic,
    is_tag_type,
)
from orbitmq.protocol import (
    MASTER_ID,
    MessageModel,
    OffsetMovedEvent,
    RemotingCommand,
    ResponseCode,
)
from orbitmq.protocol.body import ConsumeType, SubscriptionGroupConfig
from orbitmq.protocol.faq_url import FAQ_SUGGESTION
from orbitmq.protocol.header import PullMessageRequestHeader, PullMessageResponseHeader
from orbitmq.protocol.perm_name import is_readable
from orbitmq.protocol.processor_codes import PULL_MESSAGE_CODES
from orbitmq.protocol.pull_sys_flag import (
    has_commit_offset_flag,
    has_subscription_flag,
    has_suspend_flag,
)
from orbitmq.remoting import ChannelContext
from orbitmq.store import (
    BrokerRole,
    ColdReader,
    GetMessageResult,
    GetMessageStatus,
    MessageFilter,
    MessageStore,
    MessageStoreConfig,
    PutMessageStatus,
)

log = logging.getLogger(__name__)


#: GetMessageStatus -> response code, as PullMessageProcessor's switch answers. The two
#: statuses that depend on the requested offset are handled in ``_status_code``.
_STATUS_CODES: Final = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}
_EMPTY_QUEUE_STATUSES: Final = frozenset(
    {GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE}
)

#: (group, topic) -> the subscription a consumer declared in its heartbeat, if any.
SubscriptionLookup = Callable[[str, str], SubscriptionData | None]


class ConsumerGroups(Protocol):
    """What the online consumers' heartbeats declared for a group (``ConsumerManager``);
    None when the group is not online."""

    def message_model(self, group: str) -> MessageModel | None: ...

    def consume_type(self, group: str) -> ConsumeType | None: ...


def _status_code(status: GetMessageStatus, request_offset: int) -> int:
    if status in _EMPTY_QUEUE_STATUSES:
        # An empty (or missing) queue: offset 0 is where it will start, anything else moved.
        return (
            ResponseCode.PULL_OFFSET_MOVED if request_offset != 0 else ResponseCode.PULL_NOT_FOUND
        )
    return _STATUS_CODES[status]


class PullMessageProcessor:
    """Answers PULL_MESSAGE. A pull that finds nothing and may be suspended is handed to
    the ``PullRequestHoldService`` and answered later through ``ctx.write``.

    Subscriptions come from the request (PullSysFlag subscription bit) or, without it, from
    ``find_subscription`` (the heartbeat registry, when there is one). Use from the
    broker's event loop only.
    """

    REQUEST_CODES: Final = PULL_MESSAGE_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store_config: MessageStoreConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_offset_manager: ConsumerOffsetManager,
        find_subscription: SubscriptionLookup | None = None,
        consumer_filter_manager: ConsumerFilterManager | None = None,
        consumer_groups: ConsumerGroups | None = None,
        *,
        stats: tuple[BrokerStatsManager, StoreStatsService] | None = None,
    ) -> None:
        self.consumer_groups = consumer_groups
        self.broker_config = broker_config
        self.stats = stats
        self.consumer_filter_manager = consumer_filter_manager or ConsumerFilterManager()
        self.store_config = store_config
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.find_subscription = find_subscription
        self.pull_request_hold_service = PullRequestHoldService(
            store,
            self.execute_request_when_wakeup,
            long_polling_enable=broker_config.long_polling_enable,
            short_polling_time_ms=broker_config.short_polling_time_mills,
        )
        self._wakeups: set[asyncio.Task[None]] = set()
        #: The cold data flow control: each group's cold reads, and its held pulls.
        self.cold_data = ColdDataFlowControl(broker_config, store, self.execute_request_when_wakeup)
        #: Reads cold records on threads, so a page fault never blocks the loop.
        self.cold_reader = ColdReader(store.commit_log, store_config.cold_read_max_in_flight)
        #: Counts pulled messages and pull offsets when the broker exports metrics (set by
        #: its wiring).
        self.message_counters: MessageCounters | None = None

    async def start(self) -> None:
        """Start the held pulls' services."""
        await self.pull_request_hold_service.start()
        await self.cold_data.start()

    async def stop(self) -> None:
        """Stop the held pulls' services and let the cold reads' threads go."""
        await self.pull_request_hold_service.stop()
        await self.cold_data.stop()
        self.cold_reader.close()

    def reject_request(self) -> bool:
        return False

    async def _record_offset_moved(self, header: PullMessageRequestHeader, new_offset: int) -> None:
        """Log the correction and store it as an ``OffsetMovedEvent`` in OFFSET_MOVED_EVENT
        (tag and key: the group), where operators' tools look for consumers that fell
        behind retention or asked beyond the end."""
        log.warning(
            "PULL_OFFSET_MOVED: correction offset. topic=%s, group=%s, requestOffset=%d, "
            "newOffset=%d",
            header.topic,
            header.consumer_group,
            header.queue_offset,
            new_offset,
        )
        event = OffsetMovedEvent(
            consumer_group=header.consumer_group,
            message_queue=MessageQueue(
                header.topic, self.broker_config.broker_name, header.queue_id
            ),
            offset_request=header.queue_offset,
            offset_new=new_offset,
        )
        properties = {
            mc.PROPERTY_TAGS: header.consumer_group,
            mc.PROPERTY_KEYS: header.consumer_group,
        }
        store_host = self.store.commit_log.store_host
        msg = MessageExtBrokerInner(
            RMQ_SYS_OFFSET_MOVED_EVENT,
            body=event.to_json(),
            properties=properties,
            properties_string=message_properties_to_string(properties),
            born_timestamp=int(time.time() * 1000),
            born_host=store_host,
            store_host=store_host,
        )
        result = await self.store.async_put_message(msg)
        if result.status is not PutMessageStatus.PUT_OK:
            log.warning("offset moved event not stored: %s %s", result.status.name, result.remark)

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        return await self.process(ctx, request, broker_allow_suspend=True)

    def execute_request_when_wakeup(self, held: PullRequest) -> None:
        """Run a held pull again, without suspending it twice, and write its answer."""
        task = asyncio.get_running_loop().create_task(self._wakeup(held))
        self._wakeups.add(task)
        task.add_done_callback(self._wakeups.discard)

    async def _wakeup(self, held: PullRequest) -> None:
        if not held.ctx.is_active:
            return
        try:
            response = await self.process(
                held.ctx,
                held.request,
                broker_allow_suspend=False,
                broker_allow_flow_ctr_suspend=NO_SUSPEND_KEY not in held.request.ext_fields,
            )
        except Exception:
            log.exception("pull request on wakeup failed, %s", held.ctx.remote_address)
            return
        if response is not None and not held.request.is_oneway:
            held.ctx.write(response)

    async def process(
        self,
        ctx: ChannelContext,
        request: RemotingCommand,
        broker_allow_suspend: bool,
        broker_allow_flow_ctr_suspend: bool = True,
    ) -> RemotingCommand | None:
        header = PullMessageRequestHeader.from_ext_fields(request.ext_fields)
        response = RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR)
        checked = await self._check(ctx, header, response)
        if checked is None:
            return response
        group_config, subscription, filter_data = checked
        message_filter = self._message_filter(header, subscription, filter_data)
        max_msg_nums = header.max_msg_nums
        if self.cold_data.is_controlled(
            header.consumer_group, header.topic, header.queue_id, header.queue_offset
        ):
            push = self._consume_type(header.consumer_group) is ConsumeType.CONSUME_PASSIVELY
            if push or broker_allow_flow_ctr_suspend:
                return self.cold_data.refuse_or_hold(
                    ctx, request, header, response, (subscription, message_filter), push
                )
            max_msg_nums = 1  # released from the hold: one message, then held again
        began = time.monotonic_ns()
        result = self.store.get_message(
            header.consumer_group,
            header.topic,
            header.queue_id,
            header.queue_offset,
            max_msg_nums,
            message_filter,
        )
        self.cold_data.cold_data_cg_ctr_service.cold_acc(
            header.consumer_group, result.cold_data_sum
        )
        if result.cold_offsets is not None:
            await self.cold_reader.load(result)
        if self.stats is not None:
            _count_get(self.stats, header, result, began)
        answer: RemotingCommand | None = self._fill(response, header, group_config, result)
        counters = self.message_counters
        if counters is not None and result.status is GetMessageStatus.FOUND:
            counters.record_out(
                header.topic,
                header.consumer_group,
                header.queue_id,
                result.message_count,
                result.buffer_total_size,
                result.next_begin_offset,
            )
        if response.code == ResponseCode.PULL_NOT_FOUND and broker_allow_suspend:
            if has_suspend_flag(header.sys_flag):
                self._suspend(ctx, request, header, subscription, message_filter)
                answer = None
        elif response.code == ResponseCode.PULL_OFFSET_MOVED:
            await self._record_offset_moved(header, result.next_begin_offset)
        if (
            broker_allow_suspend
            and has_commit_offset_flag(header.sys_flag)
            and self.store_config.broker_role is not BrokerRole.SLAVE
        ):
            self.consumer_offset_manager.commit_offset(
                ctx.remote_address,
                header.consumer_group,
                header.topic,
                header.queue_id,
                header.commit_offset,
            )
        return answer

    def _consume_type(self, group: str) -> ConsumeType | None:
        """How the group consumes; a group without a heartbeat (None) is held like a pull
        consumer's (RocketMQ's broker fails on such a pull with a NullPointerException)."""
        groups = self.consumer_groups
        return groups.consume_type(group) if groups is not None else None

    async def _check(
        self, ctx: ChannelContext, header: PullMessageRequestHeader, response: RemotingCommand
    ) -> tuple[SubscriptionGroupConfig, SubscriptionData, ConsumerFilterData | None] | None:
        """Permissions, group, topic, queue id and subscription, as RocketMQ checks them
        before reading; None with ``response`` filled when the pull is refused."""
        if not is_readable(self.broker_config.broker_permission):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker_config.broker_ip1}] pulling message is forbidden",
            )
            return None
        group = header.consumer_group
        manager = self.subscription_group_manager
        group_config = manager.get(group)
        if group_config is None:
            # Auto-creating a group saves subscriptionGroup.json: keep it off the loop.
            group_config = await asyncio.to_thread(manager.find_subscription_group_config, group)
        if group_config is None:
            response.set_code_and_remark(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group [{group}] does not exist, {FAQ_SUGGESTION}",
            )
            return None
        if not group_config.consume_enable:
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}"
            )
            return None
        topic_config = self.topic_config_manager.select_topic_config(header.topic)
        if topic_config is None:
            log.error("the topic %s not exist, consumer: %s", header.topic, ctx.remote_address)
            response.set_code_and_remark(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{header.topic}] not exist, apply first please! {FAQ_SUGGESTION}",
            )
            return None
        if not is_readable(topic_config.perm):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the topic[{header.topic}] pulling message is forbidden",
            )
            return None
        if not 0 <= header.queue_id < topic_config.read_queue_nums:
            response.set_code_and_remark(
                ResponseCode.SYSTEM_ERROR,
                f"queueId[{header.queue_id}] is illegal, topic:[{header.topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}] "
                f"consumer:[{ctx.remote_address}]",
            )
            return None
        if self._broadcast_refused(header, group_config):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{group}] can not consume by broadcast way",
            )
            return None
        found = self._subscription(header, response)
        if found is None:
            return None
        if (
            not is_tag_type(found[0].expression_type)
            and not self.broker_config.enable_property_filter
        ):
            response.set_code_and_remark(
                ResponseCode.SYSTEM_ERROR,
                "The broker does not support consumer to filter message by "
                f"{found[0].expression_type}",
            )
            return None
        return group_config, *found

    def _message_filter(
        self,
        header: PullMessageRequestHeader,
        subscription: SubscriptionData,
        filter_data: ConsumerFilterData | None,
    ) -> MessageFilter:
        """RocketMQ's choice: with filterSupportRetry a group's retry topic is filtered by
        the group's SQL92 filters of the original topics; an SQL92 subscription by its
        compiled expression; anything else by tags."""
        if self.broker_config.filter_support_retry and is_retry_topic(header.topic):
            return RetrySql92MessageFilter(
                header.topic,
                self.consumer_filter_manager.get_expression,
                TagMessageFilter(subscription),
            )
        if filter_data is not None:
            return Sql92MessageFilter(filter_data.compiled)
        return TagMessageFilter(subscription)

    def _broadcast_refused(
        self, header: PullMessageRequestHeader, group_config: SubscriptionGroupConfig
    ) -> bool:
        """A broadcasting group whose consumeBroadcastEnable is off; RocketMQ checks it for
        pulls that rely on the heartbeat's subscription (no subscription flag)."""
        return (
            not group_config.consume_broadcast_enable
            and not has_subscription_flag(header.sys_flag)
            and self.consumer_groups is not None
            and self.consumer_groups.message_model(header.consumer_group)
            is MessageModel.BROADCASTING
        )

    def _subscription(
        self, header: PullMessageRequestHeader, response: RemotingCommand
    ) -> tuple[SubscriptionData, ConsumerFilterData | None] | None:
        """The pull's subscription (from the request, else from the heartbeats) and, for
        SQL92, its compiled filter; None with ``response`` filled when refused."""
        if has_subscription_flag(header.sys_flag):
            try:
                subscription = build_subscription(
                    header.topic, header.subscription, header.expression_type, header.sub_version
                )
                filter_data = None
                if not is_tag_type(subscription.expression_type):
                    filter_data = build_consumer_filter_data(
                        header.topic,
                        header.consumer_group,
                        subscription.sub_string,
                        subscription.expression_type,
                        header.sub_version,
                    )
            except SubscriptionParseError:
                log.warning(
                    "Parse the consumer's subscription[%s] failed, group: %s",
                    header.subscription,
                    header.consumer_group,
                )
                response.set_code_and_remark(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED,
                    "parse the consumer's subscription failed",
                )
                return None
        else:
            found = (
                self.find_subscription(header.consumer_group, header.topic)
                if self.find_subscription is not None
                else None
            )
            if found is None:
                # Without a heartbeat registry there is no group info at all.
                what = "subscription" if self.find_subscription is not None else "group info"
                response.set_code_and_remark(
                    ResponseCode.SUBSCRIPTION_NOT_EXIST,
                    f"the consumer's {what} not exist{FAQ_SUGGESTION}",
                )
                return None
            if found.sub_version < header.sub_version:
                response.set_code_and_remark(
                    ResponseCode.SUBSCRIPTION_NOT_LATEST,
                    "the consumer's subscription not latest",
                )
                return None
            subscription = found
            filter_data = None
            if not is_tag_type(subscription.expression_type):
                filter_data = self._registered_filter(header, response)
                if filter_data is None:
                    return None
        return subscription, filter_data

    def _registered_filter(
        self, header: PullMessageRequestHeader, response: RemotingCommand
    ) -> ConsumerFilterData | None:
        """The filter the group's heartbeats registered for the topic, when it exists and
        is as new as the pull's subscription version."""
        data = self.consumer_filter_manager.get(header.topic, header.consumer_group)
        if data is None:
            response.set_code_and_remark(
                ResponseCode.FILTER_DATA_NOT_EXIST,
                "The broker's consumer filter data is not exist!Your expression may be wrong!",
            )
            return None
        if data.client_version < header.sub_version:
            log.warning(
                "The broker's consumer filter data is not latest, group: %s, topic: %s, "
                "serverV: %d, clientV: %d",
                header.consumer_group,
                header.topic,
                data.client_version,
                header.sub_version,
            )
            response.set_code_and_remark(
                ResponseCode.FILTER_DATA_NOT_LATEST,
                "the consumer's consumer filter data not latest",
            )
            return None
        return data

    def _fill(
        self,
        response: RemotingCommand,
        header: PullMessageRequestHeader,
        group_config: SubscriptionGroupConfig,
        result: GetMessageResult,
    ) -> RemotingCommand:
        response.remark = result.status.name
        response.code = _status_code(result.status, header.queue_offset)
        suggest = MASTER_ID
        if self.broker_config.slave_read_enable:
            suggest = (
                group_config.which_broker_when_consume_slowly
                if result.suggest_pulling_from_slave
                else group_config.broker_id
            )
        # RocketMQ sets PULL_RETRY_IMMEDIATELY here for a slave that may not be read, then
        # overwrites it with the status's code: only the suggestion (master) survives.
        response_header = PullMessageResponseHeader(
            suggest_which_broker_id=suggest,
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        )
        response.ext_fields.update(response_header.to_ext_fields())
        if response.code == ResponseCode.SUCCESS:
            response.body = result.body()
        return response

    def _suspend(
        self,
        ctx: ChannelContext,
        request: RemotingCommand,
        header: PullMessageRequestHeader,
        subscription: SubscriptionData,
        message_filter: MessageFilter,
    ) -> None:
        polling_ms = header.suspend_timeout_millis
        if not self.broker_config.long_polling_enable:
            polling_ms = self.broker_config.short_polling_time_mills
        held = PullRequest(
            ctx,
            request,
            polling_ms,
            asyncio.get_running_loop().time(),
            header.queue_offset,
            subscription,
            message_filter,
        )
        self.pull_request_hold_service.suspend_pull_request(header.topic, header.queue_id, held)


def _count_get(
    stats: tuple[BrokerStatsManager, StoreStatsService],
    header: PullMessageRequestHeader,
    result: GetMessageResult,
    began_ns: int,
) -> None:
    """The stats of one read: found or missed, and the group's messages, bytes and time."""
    elapsed_ms = (time.monotonic_ns() - began_ns) // 1_000_000
    found = len(result.message_buffers) if result.status is GetMessageStatus.FOUND else 0
    stats[1].on_get(found, elapsed_ms)
    if found:
        stats[0].on_get(
            header.topic, header.consumer_group, found, result.buffer_total_size, elapsed_ms
        )
