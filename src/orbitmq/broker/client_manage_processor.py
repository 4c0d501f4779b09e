"""``ClientManageProcessor``: HEART_BEAT (34), UNREGISTER_CLIENT (35) and
CHECK_CLIENT_CONFIG (46) — the client registry's door (RocketMQ's
``ClientManageProcessor``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_filter_manager import (
    ConsumerFilterManager,
    build_consumer_filter_data,
)
from orbitmq.broker.consumer_manager import (
    ClientChannelInfo,
    ConsumerManager,
    subscription_from_heartbeat,
)
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.topic import retry_topic
from orbitmq.filter import SubscriptionParseError, is_tag_type
from orbitmq.protocol import (
    ConsumerData,
    HeartbeatData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    loads_body,
)
from orbitmq.protocol.body import SubscriptionGroupConfig
from orbitmq.protocol.header import UnregisterClientRequestHeader
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.protocol.processor_codes import CLIENT_MANAGE_CODES
from orbitmq.protocol.topic_sys_flag import build_topic_sys_flag
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor

log = logging.getLogger(__name__)


class ClientManageProcessor(CodeDispatchingProcessor):
    """Answers HEART_BEAT, UNREGISTER_CLIENT and CHECK_CLIENT_CONFIG. A consumer's heartbeat
    also creates its subscription group (when allowed) and its ``%RETRY%group`` topic, as
    RocketMQ 4.9.8 does. Holds no state of its own; event-loop confined (the registries
    are)."""

    REQUEST_CODES: Final = CLIENT_MANAGE_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_manager: ConsumerManager,
        producer_manager: ProducerManager,
        consumer_filter_manager: ConsumerFilterManager | None = None,
    ) -> None:
        super().__init__(
            {
                RequestCode.HEART_BEAT: self.heart_beat,
                RequestCode.UNREGISTER_CLIENT: self.unregister_client,
                RequestCode.CHECK_CLIENT_CONFIG: self.check_client_config,
            }
        )
        self.broker_config = broker_config
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_manager = consumer_manager
        self.producer_manager = producer_manager
        self.consumer_filter_manager = consumer_filter_manager or ConsumerFilterManager()

    async def heart_beat(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        heartbeat = HeartbeatData.from_json(request.body)
        for data in heartbeat.consumer_data_set:
            group_config = await self._group_config(data.group_name)
            notify_enable = True
            if group_config is not None:
                notify_enable = group_config.notify_consumer_ids_changed_enable
                await self._create_retry_topic(data, group_config)
            subscriptions = [subscription_from_heartbeat(s) for s in data.subscription_data_set]
            changed = self.consumer_manager.register_consumer(
                data.group_name,
                _channel_info(ctx, request, heartbeat.client_id),
                data.consume_type,
                data.message_model,
                data.consume_from_where,
                subscriptions,
                notify_enable,
            )
            # RocketMQ registers the group's SQL92 filters on every heartbeat, whether or
            # not enablePropertyFilter is on (pulls are refused then, not heartbeats).
            self.consumer_filter_manager.register(data.group_name, subscriptions)
            if changed:
                log.info(
                    "registerConsumer info changed %s %s %s",
                    data.group_name,
                    heartbeat.client_id,
                    ctx.remote_address,
                )
        for producer in heartbeat.producer_data_set:
            self.producer_manager.register_producer(
                producer.group_name, _channel_info(ctx, request, heartbeat.client_id)
            )
        return RemotingCommand.create_success(request)

    async def _group_config(self, group: str) -> SubscriptionGroupConfig | None:
        manager = self.subscription_group_manager
        found = manager.get(group)
        if found is None:
            # Auto-creating a group saves subscriptionGroup.json: keep it off the loop.
            found = await asyncio.to_thread(manager.find_subscription_group_config, group)
        return found

    async def _create_retry_topic(
        self, data: ConsumerData, group_config: SubscriptionGroupConfig
    ) -> None:
        topic = retry_topic(data.group_name)
        if self.topic_config_manager.select_topic_config(topic) is not None:
            return
        sys_flag = build_topic_sys_flag(False, True) if data.unit_mode else 0
        await asyncio.to_thread(
            self.topic_config_manager.create_topic_in_send_message_back_method,
            topic,
            group_config.retry_queue_nums,
            PERM_WRITE | PERM_READ,
            sys_flag,
        )

    async def unregister_client(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = UnregisterClientRequestHeader.from_ext_fields(request.ext_fields)
        if header.producer_group is not None:
            self.producer_manager.unregister_producer(header.producer_group, ctx)
        if header.consumer_group is not None:
            group_config = await self._group_config(header.consumer_group)
            notify_enable = (
                group_config.notify_consumer_ids_changed_enable
                if group_config is not None
                else True
            )
            self.consumer_manager.unregister_consumer(header.consumer_group, ctx, notify_enable)
        return RemotingCommand.create_success(request)

    async def check_client_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        subscription = _check_body_subscription(request.body)
        if subscription is None:
            return RemotingCommand.create_success(request)
        expression_type = subscription.get("expressionType")
        if not isinstance(expression_type, str) or is_tag_type(expression_type):
            return RemotingCommand.create_success(request)
        if not self.broker_config.enable_property_filter:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {expression_type}",
            )
        expression = subscription.get("subString")
        try:
            build_consumer_filter_data(
                str(subscription.get("topic", "")),
                "",
                expression if isinstance(expression, str) else "",
                expression_type,
                0,
            )
        except SubscriptionParseError as exc:
            log.warning(
                "Client %s filter message, but failed to compile expression! sub=%s, error=%s",
                ctx.remote_address,
                subscription,
                exc,
            )
            return RemotingCommand.create_response(
                request, ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc)
            )
        return RemotingCommand.create_success(request)


def _channel_info(
    ctx: ChannelContext, request: RemotingCommand, client_id: str
) -> ClientChannelInfo:
    return ClientChannelInfo(ctx, client_id, request.language, request.version)


def _check_body_subscription(body: bytes) -> dict[str, Any] | None:
    """``CheckClientRequestBody.subscriptionData`` as parsed JSON, or None."""
    if not body:
        return None
    parsed = loads_body(body)
    if not isinstance(parsed, dict):
        return None
    subscription = parsed.get("subscriptionData")
    return subscription if isinstance(subscription, dict) else None
