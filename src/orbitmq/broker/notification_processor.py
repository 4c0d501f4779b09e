"""``NotificationProcessor``: NOTIFICATION (200054) — tell a consumer whether a POP would
find something, waiting up to its poll time for a message (RocketMQ 5's
``NotificationProcessor``): ``hasMsg``, or ``pollingFull`` when too many are held."""

from __future__ import annotations

import asyncio
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.consumer_order_info_manager import ConsumerOrderInfoManager
from orbitmq.broker.pop_long_polling_service import PopLongPollingService
from orbitmq.broker.pop_message_processor import check_topic_and_group
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.key_builder import build_pop_retry_topic
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.header import NotificationRequestHeader, NotificationResponseHeader
from orbitmq.protocol.perm_name import is_readable
from orbitmq.protocol.processor_codes import NOTIFICATION_CODES
from orbitmq.remoting import ChannelContext
from orbitmq.store import MessageStore


class NotificationProcessor:
    """Answers NOTIFICATION. Use from the broker's event loop only."""

    REQUEST_CODES: Final = NOTIFICATION_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_offset_manager: ConsumerOffsetManager,
        order_info_manager: ConsumerOrderInfoManager,
        long_polling: PopLongPollingService,
    ) -> None:
        self.broker_config = broker_config
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.order_info_manager = order_info_manager
        self.long_polling = long_polling

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = NotificationRequestHeader.from_ext_fields(request.ext_fields)
        deadline_s = asyncio.get_running_loop().time() + max(header.poll_time, 0) / 1000
        return await self._notify(ctx, request, header, deadline_s)

    async def _notify(
        self,
        ctx: ChannelContext,
        request: RemotingCommand,
        header: NotificationRequestHeader,
        deadline_s: float,
    ) -> RemotingCommand | None:
        response = RemotingCommand.create_response(request, ResponseCode.SUCCESS)
        if not is_readable(self.broker_config.broker_permission):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker_config.broker_ip1}] peeking message is forbidden",
            )
            return response
        topic_config = await check_topic_and_group(
            self.topic_config_manager,
            self.subscription_group_manager,
            header.topic,
            header.queue_id,
            header.consumer_group,
            ctx.remote_address,
            response,
        )
        if topic_config is None:
            return response
        queue_ids = [header.queue_id]
        if header.queue_id < 0:
            queue_ids = list(range(topic_config.read_queue_nums))
        has_msg = any(self._has_msg(header, header.topic, q) for q in queue_ids)
        if not has_msg and not header.order:
            retry = build_pop_retry_topic(header.topic, header.consumer_group)
            has_msg = self._has_msg(header, retry, 0)
        polling_full = False
        remaining_ms = int((deadline_s - asyncio.get_running_loop().time()) * 1000)
        if not has_msg and remaining_ms > 0:
            key = (header.topic, header.consumer_group, header.queue_id)
            if self.long_polling.hold_request(
                key,
                remaining_ms,
                ctx,
                lambda: self._notify(ctx, request, header, deadline_s),
                "NOTIFICATION",
            ):
                return None
            polling_full = True
        fields = NotificationResponseHeader(has_msg=has_msg, polling_full=polling_full)
        response.ext_fields.update(fields.to_ext_fields())
        return response

    def _has_msg(self, header: NotificationRequestHeader, topic: str, queue_id: int) -> bool:
        group = header.consumer_group
        if header.order and self.order_info_manager.check_block(
            header.attempt_id, topic, group, queue_id
        ):
            return False
        offset = self.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = self.store.get_min_offset_in_queue(topic, queue_id)
        return self.store.get_max_offset_in_queue(topic, queue_id) > offset
