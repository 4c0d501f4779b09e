"""``SendMessageBackProcessor``: CONSUMER_SEND_MSG_BACK (36), a consumer handing back a
message it failed to consume (RocketMQ's ``SendMessageProcessor.asyncConsumerSendMsgBack``).

The message is stored again in ``%RETRY%<group>`` with delay level 3 + reconsume times (or
the level the client asked for), so the store parks it in SCHEDULE_TOPIC_XXXX until due; once
it has been reconsumed ``maxReconsumeTimes`` times, or the client asks with a level below 0,
it goes to ``%DLQ%<group>`` instead.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.broker_stats_manager import BrokerStatsManager
from orbitmq.broker.send_message_processor import DLQ_NUMS_PER_GROUP
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import InvalidTopicError, TopicConfigManager
from orbitmq.common import MessageExt, MessageExtBrokerInner, message_properties_to_string
from orbitmq.common import message_const as mc
from orbitmq.common.topic import dlq_topic, retry_topic
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import SubscriptionGroupConfig, TopicConfig
from orbitmq.protocol.faq_url import FAQ_SUGGESTION
from orbitmq.protocol.header import ConsumerSendMsgBackRequestHeader
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE, is_writeable
from orbitmq.protocol.processor_codes import SEND_MESSAGE_BACK_CODES
from orbitmq.protocol.topic_sys_flag import build_topic_sys_flag
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import MessageStore, PutMessageStatus

log = logging.getLogger(__name__)

#: RocketMQ's first retry level: 3 (10s with the default levels) + reconsume times.
FIRST_RETRY_DELAY_LEVEL: Final = 3


class SendMessageBackProcessor(CodeDispatchingProcessor):
    """Answers CONSUMER_SEND_MSG_BACK. Holds no state of its own beyond its collaborators;
    safe from several tasks of the broker's event loop."""

    REQUEST_CODES: Final = SEND_MESSAGE_BACK_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        *,
        stats: BrokerStatsManager | None = None,
    ) -> None:
        """``stats`` counts each message sent back (SNDBCK_PUT_NUMS) when given."""
        super().__init__({RequestCode.CONSUMER_SEND_MSG_BACK: self.consumer_send_msg_back})
        self.stats = stats
        self.broker_config = broker_config
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self._random = random.Random()

    async def consumer_send_msg_back(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = ConsumerSendMsgBackRequestHeader.from_ext_fields(request.ext_fields)
        group = header.group
        group_config = await asyncio.to_thread(
            self.subscription_group_manager.find_subscription_group_config, group
        )
        if group_config is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group} {FAQ_SUGGESTION}",
            )
        if not is_writeable(self.broker_config.broker_permission):
            return RemotingCommand.create_response(
                request,
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker_config.broker_ip1}] sending message is forbidden",
            )
        if group_config.retry_queue_nums <= 0:
            # The group does not retry: the message is dropped, as RocketMQ does.
            return RemotingCommand.create_success(request)
        queue = await self._retry_queue(request, header, group_config)
        if isinstance(queue, RemotingCommand):
            return queue
        msg_ext = self.store.look_message_by_offset(header.offset)
        if msg_ext is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"look message by offset failed, {header.offset}",
            )
        max_reconsume_times = group_config.retry_max_times
        if header.max_reconsume_times is not None:
            max_reconsume_times = header.max_reconsume_times
        if msg_ext.reconsume_times >= max_reconsume_times or header.delay_level < 0:
            queue = await self._dlq_queue(request, group)
            if isinstance(queue, RemotingCommand):
                return queue
            msg_ext.delay_time_level = 0
        elif header.delay_level == 0:
            msg_ext.delay_time_level = FIRST_RETRY_DELAY_LEVEL + msg_ext.reconsume_times
        else:
            msg_ext.delay_time_level = header.delay_level
        return await self._put_back(request, group, msg_ext, queue)

    async def _retry_queue(
        self,
        request: RemotingCommand,
        header: ConsumerSendMsgBackRequestHeader,
        group_config: SubscriptionGroupConfig,
    ) -> tuple[str, int] | RemotingCommand:
        """A random queue of ``%RETRY%<group>`` (created when missing), or the refusal."""
        topic = retry_topic(header.group)
        queue_id = self._random.randrange(99_999_999) % group_config.retry_queue_nums
        topic_sys_flag = build_topic_sys_flag(False, True) if header.unit_mode else 0
        topic_config = await self._create_topic(
            topic, group_config.retry_queue_nums, topic_sys_flag
        )
        if topic_config is None:
            return _topic_not_exist(request, topic)
        if not is_writeable(topic_config.perm):
            return RemotingCommand.create_response(
                request,
                ResponseCode.NO_PERMISSION,
                f"the topic[{topic}] sending message is forbidden",
            )
        return topic, queue_id

    async def _dlq_queue(
        self, request: RemotingCommand, group: str
    ) -> tuple[str, int] | RemotingCommand:
        """A queue of ``%DLQ%<group>`` (created when missing), or the refusal."""
        topic = dlq_topic(group)
        queue_id = self._random.randrange(99_999_999) % DLQ_NUMS_PER_GROUP
        if await self._create_topic(topic, DLQ_NUMS_PER_GROUP, 0) is None:
            return _topic_not_exist(request, topic)
        return topic, queue_id

    async def _put_back(
        self, request: RemotingCommand, group: str, msg_ext: MessageExt, queue: tuple[str, int]
    ) -> RemotingCommand:
        """Stores ``msg_ext`` again in ``queue`` (topic, queue id), one reconsume later and
        marked with its first topic and its original message id."""
        properties = msg_ext.properties
        properties.setdefault(mc.PROPERTY_RETRY_TOPIC, msg_ext.topic)
        properties[mc.PROPERTY_WAIT_STORE_MSG_OK] = "false"
        if not properties.get(mc.PROPERTY_ORIGIN_MESSAGE_ID):
            properties[mc.PROPERTY_ORIGIN_MESSAGE_ID] = msg_ext.msg_id
        topic, queue_id = queue
        inner = MessageExtBrokerInner(
            topic,
            body=msg_ext.body,
            flag=msg_ext.flag,
            properties=properties,
            queue_id=queue_id,
            sys_flag=msg_ext.sys_flag,
            born_timestamp=msg_ext.born_timestamp,
            born_host=msg_ext.born_host,
            store_host=msg_ext.store_host,
            reconsume_times=msg_ext.reconsume_times + 1,
            properties_string=message_properties_to_string(properties),
        )
        result = await self.store.async_put_message(inner)
        if result.status is PutMessageStatus.PUT_OK:
            if self.stats is not None:
                # Under the topic it was first sent to, as RocketMQ's backTopic.
                self.stats.on_send_back(properties[mc.PROPERTY_RETRY_TOPIC], group)
            return RemotingCommand.create_success(request)
        log.warning(
            "send back of %s for %s failed: %s %s",
            msg_ext.msg_id,
            group,
            result.status.name,
            result.remark,
        )
        return RemotingCommand.create_response(
            request, ResponseCode.SYSTEM_ERROR, result.status.name
        )

    async def _create_topic(
        self, topic: str, queue_nums: int, topic_sys_flag: int
    ) -> TopicConfig | None:
        try:
            # Creating a topic saves topics.json (an fsync): keep it off the loop.
            return await asyncio.to_thread(
                self.topic_config_manager.create_topic_in_send_message_back_method,
                topic,
                queue_nums,
                PERM_READ | PERM_WRITE,
                topic_sys_flag,
            )
        except InvalidTopicError:
            return None


def _topic_not_exist(request: RemotingCommand, topic: str) -> RemotingCommand:
    return RemotingCommand.create_response(
        request, ResponseCode.SYSTEM_ERROR, f"topic[{topic}] not exist"
    )
