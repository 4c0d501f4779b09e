"""``AdminBrokerProcessor``: the admin and queue-lock requests of RocketMQ's
``AdminBrokerProcessor`` that OrbitMQ answers so far:

- GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), SEARCH_OFFSET_BY_TIMESTAMP (29),
  GET_EARLIEST_MSG_STORETIME (32): a queue's offsets and times, read from the store;
- UPDATE_AND_CREATE_TOPIC (17) with RocketMQ 5's ``attributes`` (``+message.type=FIFO``),
  DELETE_TOPIC_IN_BROKER (215), GET_ALL_TOPIC_CONFIG (21);
- GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45), GET_ALL_SUBSCRIPTIONGROUP_CONFIG
  (201): with GET_ALL_TOPIC_CONFIG, what a slave's ``SlaveSynchronize`` copies from its master
  (ours or RocketMQ's), as the JSON of RocketMQ's encode();
- LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42) through the ``RebalanceLockManager``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.rebalance_lock_manager import RebalanceLockManager
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.topic import is_system_topic, validate_topic
from orbitmq.common.topic_attributes import (
    ADD_SIGN,
    TOPIC_MESSAGE_TYPE_ATTRIBUTE,
    TopicAttributeError,
    parse_attributes_modification,
)
from orbitmq.common.topic_message_type import TopicMessageType
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import (
    ConsumerOffsetSerializeWrapper,
    LockBatchRequestBody,
    LockBatchResponseBody,
    TopicConfig,
    TopicFilterType,
    UnlockBatchRequestBody,
)
from orbitmq.protocol.header import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
)
from orbitmq.protocol.processor_codes import ADMIN_BROKER_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import MessageStore
from orbitmq.store.message_store_config import BrokerRole

log = logging.getLogger(__name__)

#: RocketMQ 4.9.8's remark (AdminBrokerProcessor.validateSlave).
SLAVE_REMARK: Final = (
    "Can't modify topic or subscription group from slave broker, "
    "please execute it from master broker."
)


#: RocketMQ 5's remark when a topic is to be MIXED and the broker does not allow it.
MIXED_NOT_SUPPORTED_REMARK: Final = "MIXED message type is not supported."


def system_topic_remark(topic: str) -> str:
    return f"The topic[{topic}] is conflict with system topic."


class AdminBrokerProcessor(CodeDispatchingProcessor):
    """Admin requests on topics and queues, and the orderly-consumption queue locks.

    Event-loop confined; topic changes (which write topics.json) run in a worker thread and
    are serialized by an asyncio lock, as RocketMQ's handlers are ``synchronized``.
    ``on_topic_changed`` is called after a topic is created or updated, so the broker can
    re-register with the name servers at once (RocketMQ's registerIncrementBrokerData).
    """

    REQUEST_CODES: Final = ADMIN_BROKER_CODES

    def __init__(
        self,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        consumer_offset_manager: ConsumerOffsetManager,
        rebalance_lock_manager: RebalanceLockManager,
        *,
        broker_role: BrokerRole = BrokerRole.ASYNC_MASTER,
        on_topic_changed: Callable[[TopicConfig], None] | None = None,
        subscription_group_manager: SubscriptionGroupManager | None = None,
        delay_offsets: Callable[[], bytes] | None = None,
    ) -> None:
        """``delay_offsets`` gives delayOffset.json's content (RocketMQ's
        ScheduleMessageService.encode); it and ``subscription_group_manager`` serve the
        slaves' sync: without them those two codes answer SYSTEM_ERROR."""
        super().__init__(
            {
                RequestCode.GET_MAX_OFFSET: self.get_max_offset,
                RequestCode.GET_MIN_OFFSET: self.get_min_offset,
                RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.search_offset_by_timestamp,
                RequestCode.GET_EARLIEST_MSG_STORETIME: self.get_earliest_msg_storetime,
                RequestCode.UPDATE_AND_CREATE_TOPIC: self.update_and_create_topic,
                RequestCode.DELETE_TOPIC_IN_BROKER: self.delete_topic,
                RequestCode.GET_ALL_TOPIC_CONFIG: self.get_all_topic_config,
                RequestCode.GET_ALL_CONSUMER_OFFSET: self.get_all_consumer_offset,
                RequestCode.GET_ALL_DELAY_OFFSET: self.get_all_delay_offset,
                RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.get_all_subscription_group,
                RequestCode.LOCK_BATCH_MQ: self.lock_batch_mq,
                RequestCode.UNLOCK_BATCH_MQ: self.unlock_batch_mq,
            }
        )
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.rebalance_lock_manager = rebalance_lock_manager
        self.broker_role = broker_role
        self.on_topic_changed = on_topic_changed
        self.subscription_group_manager = subscription_group_manager
        self.delay_offsets = delay_offsets
        self._topic_change_lock = asyncio.Lock()

    # -- offsets and times ---------------------------------------------------------------

    async def get_max_offset(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetMaxOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return RemotingCommand.create_success(
            request, header=GetMaxOffsetResponseHeader(offset=offset)
        )

    async def get_min_offset(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetMinOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.store.get_min_offset_in_queue(header.topic, header.queue_id)
        return RemotingCommand.create_success(
            request, header=GetMinOffsetResponseHeader(offset=offset)
        )

    async def search_offset_by_timestamp(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = SearchOffsetRequestHeader.from_ext_fields(request.ext_fields)
        # A binary search reading the commit log: off the event loop.
        offset = await asyncio.to_thread(
            self.store.get_offset_in_queue_by_time, header.topic, header.queue_id, header.timestamp
        )
        return RemotingCommand.create_success(
            request, header=SearchOffsetResponseHeader(offset=offset)
        )

    async def get_earliest_msg_storetime(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetEarliestMsgStoretimeRequestHeader.from_ext_fields(request.ext_fields)
        timestamp = await asyncio.to_thread(
            self.store.get_earliest_message_time, header.topic, header.queue_id
        )
        response_header = GetEarliestMsgStoretimeResponseHeader(timestamp=timestamp)
        return RemotingCommand.create_success(request, header=response_header)

    # -- topics --------------------------------------------------------------------------

    def _refuse_topic(self, request: RemotingCommand, topic: str) -> RemotingCommand | None:
        """RocketMQ's validateSlave, validateTopic and isSystemTopic checks, in its order."""
        if self.broker_role is BrokerRole.SLAVE:
            return RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR, SLAVE_REMARK)
        problem = validate_topic(topic)
        if problem is not None:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, problem.remark
            )
        # RocketMQ's TopicConfigManager adds the broker's own topics (cluster name, broker
        # name, reply topic...) to TopicValidator's system set.
        if is_system_topic(topic) or topic in self.topic_config_manager.system_topics:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, system_topic_remark(topic)
            )
        return None

    async def update_and_create_topic(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = CreateTopicRequestHeader.from_ext_fields(request.ext_fields)
        log.info("updateAndCreateTopic %s called by %s", header.topic, ctx.remote_address)
        refused = self._refuse_topic(request, header.topic)
        if refused is not None:
            return refused
        topic_config = TopicConfig(
            header.topic,
            read_queue_nums=header.read_queue_nums,
            write_queue_nums=header.write_queue_nums,
            perm=header.perm,
            topic_filter_type=TopicFilterType[header.topic_filter_type],
            topic_sys_flag=header.topic_sys_flag or 0,
            # RocketMQ 4.9.8 ignores the header's order; the name server's order config rules.
        )
        try:
            modification = parse_attributes_modification(header.attributes)
        except TopicAttributeError as exc:
            return RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if (
            modification.get(ADD_SIGN + TOPIC_MESSAGE_TYPE_ATTRIBUTE.name)
            == TopicMessageType.MIXED.value
            and not self.topic_config_manager.mixed_message_type_enabled
        ):
            return RemotingCommand.create_response(
                request, ResponseCode.INVALID_PARAMETER, MIXED_NOT_SUPPORTED_REMARK
            )
        async with self._topic_change_lock:
            try:
                await asyncio.to_thread(
                    self.topic_config_manager.update_topic_config, topic_config, modification
                )
            except TopicAttributeError as exc:
                # RocketMQ 5 answers a refused attribute change as SYSTEM_ERROR, its reason.
                return RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR, str(exc))
        if self.on_topic_changed is not None:
            self.on_topic_changed(topic_config)
        return RemotingCommand.create_success(request)

    async def delete_topic(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        header = DeleteTopicRequestHeader.from_ext_fields(request.ext_fields)
        topic = header.topic
        log.info("deleteTopic %s called by %s", topic, ctx.remote_address)
        refused = self._refuse_topic(request, topic)
        if refused is not None:
            return refused
        async with self._topic_change_lock:
            await asyncio.to_thread(self._delete_topic, topic)
        return RemotingCommand.create_success(request)

    def _delete_topic(self, topic: str) -> None:
        self.topic_config_manager.delete_topic_config(topic)
        # RocketMQ cleans every queue of a topic the table no longer holds (cleanUnusedTopic);
        # we drop exactly the deleted one's, and its committed offsets.
        if topic not in self.topic_config_manager.topic_names():
            removed = self.store.delete_topics({topic})
            log.info("deleted %d consume queues of topic %s", removed, topic)
        self.consumer_offset_manager.clean_offset_by_topic(topic)

    async def get_all_topic_config(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        wrapper = self.topic_config_manager.build_topic_config_serialize_wrapper()
        return RemotingCommand.create_success(request, body=wrapper.to_json())

    # -- what a slave copies (RocketMQ's SlaveSynchronize asks these of its master) ---------

    async def get_all_consumer_offset(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        wrapper = ConsumerOffsetSerializeWrapper(self.consumer_offset_manager.offset_table())
        return RemotingCommand.create_success(request, body=wrapper.to_json())

    async def get_all_delay_offset(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        if self.delay_offsets is None:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, "Delay offset not supported in this messagetore"
            )
        # The slave reads a file: off the loop.
        content = await asyncio.to_thread(self.delay_offsets)
        return RemotingCommand.create_success(request, body=content)

    async def get_all_subscription_group(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        if self.subscription_group_manager is None:
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, "No subscription group in this broker"
            )
        wrapper = self.subscription_group_manager.snapshot()
        return RemotingCommand.create_success(request, body=wrapper.to_json())

    # -- queue locks ---------------------------------------------------------------------

    async def lock_batch_mq(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.from_json(request.body)
        locked = self.rebalance_lock_manager.try_lock_batch(
            body.consumer_group, body.mq_set, body.client_id
        )
        response_body = LockBatchResponseBody(lock_ok_mq_set=locked)
        return RemotingCommand.create_success(request, body=response_body.to_json())

    async def unlock_batch_mq(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        body = UnlockBatchRequestBody.from_json(request.body)
        self.rebalance_lock_manager.unlock_batch(body.consumer_group, body.mq_set, body.client_id)
        return RemotingCommand.create_success(request)
