"""``PopMessageProcessor``: POP_MESSAGE (200050) — hand out messages of a topic to a group,
each invisible to the group for a while, with a check point in the revive log instead of a
consumer's offset (RocketMQ 5's ``PopMessageProcessor``).

The checks and answers are RocketMQ's: POLLING_TIMEOUT for a request already late by more
than its poll time, INVALID_PARAMETER for more than 32 messages or a queue id out of range,
SUBSCRIPTION_GROUP_NOT_EXIST, NO_PERMISSION, TOPIC_NOT_EXIST, SUBSCRIPTION_PARSE_FAILED; a
POP that finds nothing is held (long polling) for its poll time and answered POLLING_TIMEOUT
(POLLING_FULL when too many are held).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_filter_manager import build_consumer_filter_data
from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.pop_batch_reader import PopBatch, PopBatchReader
from orbitmq.broker.pop_long_polling_service import PopLongPollingService
from orbitmq.broker.revive_log_writer import ReviveLogWriter
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.clock import Clock
from orbitmq.common.key_builder import build_pop_retry_topic
from orbitmq.filter import (
    Sql92MessageFilter,
    SubscriptionParseError,
    TagMessageFilter,
    build_subscription,
    is_tag_type,
)
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.body import ConsumeType, MessageModel, TopicConfig
from orbitmq.protocol.faq_url import FAQ_SUGGESTION
from orbitmq.protocol.header import (
    POP_MAX_MSG_NUMS,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from orbitmq.protocol.perm_name import is_readable
from orbitmq.protocol.processor_codes import POP_MESSAGE_CODES
from orbitmq.remoting import ChannelContext
from orbitmq.store import BrokerRole, MessageFilter, MessageStore

log = logging.getLogger(__name__)

#: RocketMQ's isTimeoutTooMuch: a request this late past its poll time is answered at once.
_TOO_LATE_MS: Final = 500


@dataclass(slots=True)
class _Checked:
    topic_config: TopicConfig
    message_filter: MessageFilter


class PopMessageProcessor:
    """Answers POP_MESSAGE. Reading is ``PopBatchReader``'s; this class checks the request,
    writes the batch's check points, answers, and holds requests that found nothing.
    Use from the broker's event loop only."""

    REQUEST_CODES: Final = POP_MESSAGE_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_manager: ConsumerManager,
        reader: PopBatchReader,
        long_polling: PopLongPollingService,
        writer: ReviveLogWriter,
        clock: Clock,
    ) -> None:
        self.broker_config = broker_config
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_manager = consumer_manager
        self.reader = reader
        self.long_polling = long_polling
        self.writer = writer
        self.clock = clock

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = PopMessageRequestHeader.from_ext_fields(request.ext_fields)
        born = header.born_time or self.clock.now_ms()
        if self.clock.now_ms() - born - header.poll_time > _TOO_LATE_MS:
            return RemotingCommand.create_response(
                request,
                ResponseCode.POLLING_TIMEOUT,
                f"the broker[{self.broker_config.broker_ip1}] pop message is timeout too much",
            )
        deadline_s = asyncio.get_running_loop().time() + header.poll_time / 1000
        return await self.pop(ctx, request, header, deadline_s)

    async def pop(
        self,
        ctx: ChannelContext,
        request: RemotingCommand,
        header: PopMessageRequestHeader,
        deadline_s: float,
    ) -> RemotingCommand | None:
        """One attempt: the answer, or None when the request is held for later."""
        response = RemotingCommand.create_response(request, ResponseCode.SUCCESS)
        checked = await self._check(ctx, header, response)
        if checked is None:
            return response
        pop_time = self.clock.now_ms()
        batch = self.reader.read(
            header, checked.topic_config.read_queue_nums, checked.message_filter, pop_time
        )
        if batch.count:
            if not await self._write_check_points(batch):
                response.set_code_and_remark(
                    ResponseCode.SYSTEM_ERROR, "the check points could not be stored"
                )
                return response
            if batch.rest_num > 0:
                # More is there: wake the group's other held requests (RocketMQ does too).
                self.long_polling.notify_message_arriving(
                    header.topic, header.queue_id, header.consumer_group
                )
            return self._answer(response, header, batch, ResponseCode.SUCCESS, "FOUND")
        remaining_ms = int((deadline_s - asyncio.get_running_loop().time()) * 1000)
        if remaining_ms > 0:
            key = (header.topic, header.consumer_group, header.queue_id)
            if self.long_polling.hold_request(
                key, remaining_ms, ctx, lambda: self.pop(ctx, request, header, deadline_s), "POP"
            ):
                return None
            code = ResponseCode.POLLING_FULL
        else:
            code = ResponseCode.POLLING_TIMEOUT
        return self._answer(response, header, batch, code, "NO_MESSAGE_IN_QUEUE")

    async def _write_check_points(self, batch: PopBatch) -> bool:
        """Write the batch's check points to the revive log; False when one was refused
        (they are held in memory anyway, so the messages still come back in time)."""
        written = [await self.writer.write(batch.revive_qid, ck) for ck in batch.check_points]
        return all(written)

    def _answer(
        self,
        response: RemotingCommand,
        header: PopMessageRequestHeader,
        batch: PopBatch,
        code: int,
        remark: str,
    ) -> RemotingCommand:
        response.code, response.remark = code, remark
        fields = PopMessageResponseHeader(
            pop_time=batch.pop_time,
            invisible_time=header.invisible_time,
            revive_qid=batch.revive_qid,
            rest_num=batch.rest_num,
            start_offset_info=";".join(batch.start_offset_info),
            msg_offset_info=";".join(batch.msg_offset_info),
            order_count_info=";".join(batch.order_count_info) if header.order else None,
        )
        response.ext_fields.update(fields.to_ext_fields())
        if code == ResponseCode.SUCCESS:
            response.body = b"".join(batch.records)
        return response

    async def _check(
        self, ctx: ChannelContext, header: PopMessageRequestHeader, response: RemotingCommand
    ) -> _Checked | None:
        """RocketMQ's checks before a POP reads, in its order; None with ``response`` filled
        when the POP is refused."""
        ip = self.broker_config.broker_ip1
        if self.store.config.broker_role is BrokerRole.SLAVE:
            # POP writes check points and moves offsets: the master's work.
            response.set_code_and_remark(
                ResponseCode.SLAVE_NOT_AVAILABLE,
                f"the broker[{ip}] is a slave: pop from the master",
            )
            return None
        if not is_readable(self.broker_config.broker_permission):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION, f"the broker[{ip}] pop message is forbidden"
            )
            return None
        if header.max_msg_nums > POP_MAX_MSG_NUMS:
            response.set_code_and_remark(
                ResponseCode.INVALID_PARAMETER,
                f"the broker[{ip}] pop message's num is greater than {POP_MAX_MSG_NUMS}",
            )
            return None
        if header.max_msg_nums <= 0 or header.invisible_time <= 0 or header.poll_time < 0:
            response.set_code_and_remark(
                ResponseCode.INVALID_PARAMETER,
                f"maxMsgNums {header.max_msg_nums} and invisibleTime {header.invisible_time} "
                f"must be above 0, pollTime {header.poll_time} not below 0",
            )
            return None
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
            return None
        message_filter = self._message_filter(header, response)
        if message_filter is None:
            return None
        return _Checked(topic_config, message_filter)

    def _message_filter(
        self, header: PopMessageRequestHeader, response: RemotingCommand
    ) -> MessageFilter | None:
        """The POP's filter (tags or SQL92; none: every message), used for the topic and its
        retry topic alike; the group is recorded as a POP consumer of both (RocketMQ's
        compensateBasicConsumerInfo / compensateSubscribeData)."""
        group = header.consumer_group
        expression = header.exp or "*"
        expression_type = header.exp_type if header.exp else None
        try:
            subscription = build_subscription(header.topic, expression, expression_type, 0)
            compiled = None
            if not is_tag_type(subscription.expression_type):
                compiled = build_consumer_filter_data(
                    header.topic, group, expression, subscription.expression_type, 0
                ).compiled
        except SubscriptionParseError:
            log.warning(
                "Parse the consumer's subscription[%s] failed, group: %s", header.exp, group
            )
            response.set_code_and_remark(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
            )
            return None
        retry = build_pop_retry_topic(header.topic, group)
        self.consumer_manager.compensate_basic_consumer_info(
            group, ConsumeType.CONSUME_POP, MessageModel.CLUSTERING
        )
        self.consumer_manager.compensate_subscribe_data(group, header.topic, subscription)
        self.consumer_manager.compensate_subscribe_data(
            group, retry, build_subscription(retry, "*", None, 0)
        )
        if compiled is not None:
            return Sql92MessageFilter(compiled)
        return TagMessageFilter(subscription)


async def check_topic_and_group(
    topic_config_manager: TopicConfigManager,
    subscription_group_manager: SubscriptionGroupManager,
    topic: str,
    queue_id: int,
    group: str,
    remote_address: str,
    response: RemotingCommand,
) -> TopicConfig | None:
    """The checks RocketMQ's POP, PEEK, NOTIFICATION and POLLING_INFO share: the topic
    exists and is readable, the queue id is below its read queues (-1: all), the group
    exists (created when allowed) and may consume. None with ``response`` filled when not."""
    topic_config = topic_config_manager.select_topic_config(topic)
    if topic_config is None:
        response.set_code_and_remark(
            ResponseCode.TOPIC_NOT_EXIST,
            f"topic[{topic}] not exist, apply first please! {FAQ_SUGGESTION}",
        )
        return None
    if not is_readable(topic_config.perm):
        response.set_code_and_remark(
            ResponseCode.NO_PERMISSION, f"the topic[{topic}] peeking message is forbidden"
        )
        return None
    if not -1 <= queue_id < topic_config.read_queue_nums:
        response.set_code_and_remark(
            ResponseCode.INVALID_PARAMETER,
            f"queueId[{queue_id}] is illegal, topic:[{topic}] "
            f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}] "
            f"consumer:[{remote_address}]",
        )
        return None
    group_config = subscription_group_manager.get(group)
    if group_config is None:
        # Auto-creating a group saves subscriptionGroup.json: keep it off the loop.
        group_config = await asyncio.to_thread(
            subscription_group_manager.find_subscription_group_config, group
        )
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
    return topic_config
