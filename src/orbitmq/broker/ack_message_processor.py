"""``AckMessageProcessor``: ACK_MESSAGE (200051) and BATCH_ACK_MESSAGE (200151) — a consumer
is done with popped messages (RocketMQ 5's ``AckMessageProcessor``).

An ack marks its messages in their check point at once (in memory) and is written to the
revive log (``ack`` / ``bAck`` records) before the answer. An ack of a check point no longer
in flight (its messages were revived already, or it was acked in full) changes nothing and
is answered SUCCESS, as RocketMQ answers it. A FIFO POP ack (revive queue 999) moves the
group's offset through the ConsumerOrderInfoManager instead.
"""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.consumer_order_info_manager import ILLEGAL_OFFSET, ConsumerOrderInfoManager
from orbitmq.broker.pop_check_point import AckMsg, revive_record
from orbitmq.broker.pop_long_polling_service import PopLongPollingService
from orbitmq.broker.pop_revive_service import ORDER_ACK_TAG, PopReviveService
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.clock import Clock
from orbitmq.common.key_builder import POP_ORDER_REVIVE_QUEUE
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import BatchAck, BatchAckMessageRequestBody
from orbitmq.protocol.body.errors import BodyError
from orbitmq.protocol.faq_url import FAQ_SUGGESTION
from orbitmq.protocol.header import AckMessageRequestHeader
from orbitmq.protocol.pop_extra_info import ExtraInfo, ExtraInfoError, real_topic
from orbitmq.protocol.processor_codes import ACK_MESSAGE_CODES
from orbitmq.remoting import ChannelContext
from orbitmq.store import MessageStore

log = logging.getLogger(__name__)


class AckRefusedError(Exception):
    """An ack RocketMQ would refuse: ``code`` and ``remark`` are the answer."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


class AckMessageProcessor:
    """Answers ACK_MESSAGE and BATCH_ACK_MESSAGE. Use from the broker's event loop only."""

    REQUEST_CODES: Final = ACK_MESSAGE_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        consumer_offset_manager: ConsumerOffsetManager,
        order_info_manager: ConsumerOrderInfoManager,
        revive_service: PopReviveService,
        long_polling: PopLongPollingService,
        clock: Clock,
    ) -> None:
        self.broker_config = broker_config
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.order_info_manager = order_info_manager
        self.revive_service = revive_service
        self.long_polling = long_polling
        self.clock = clock
        self.ack_count = 0

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        try:
            if request.code == RequestCode.BATCH_ACK_MESSAGE:
                return await self._batch_ack(ctx, request)
            header = AckMessageRequestHeader.from_ext_fields(request.ext_fields)
            extra = self.parse_extra_info(header.extra_info)
            topic = self.check_queue(header.consumer_group, header.topic, header.queue_id, extra)
            self.check_offset(topic, header.queue_id, header.offset, ResponseCode.NO_MESSAGE)
            await self.ack(
                ctx, header.consumer_group, topic, header.queue_id, extra, [header.offset]
            )
        except AckRefusedError as refused:
            return RemotingCommand.create_response(request, refused.code, refused.remark)
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    async def _batch_ack(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        try:
            body = BatchAckMessageRequestBody.from_json(request.body) if request.body else None
        except BodyError as exc:
            raise AckRefusedError(ResponseCode.INVALID_PARAMETER, str(exc)) from exc
        if body is None or not body.acks:
            return RemotingCommand.create_response(request, ResponseCode.NO_MESSAGE)
        for batch_ack in body.acks:
            await self._apply_batch_ack(ctx, batch_ack, body.broker_name)
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    async def _apply_batch_ack(self, ctx: ChannelContext, ack: BatchAck, broker_name: str) -> None:
        try:
            topic = real_topic(ack.topic, ack.consumer_group, ack.retry)
            offsets = ack.acked_offsets()
        except (ExtraInfoError, BodyError) as exc:
            raise AckRefusedError(ResponseCode.INVALID_PARAMETER, str(exc)) from exc
        self._check_broker(broker_name or self.broker_config.broker_name)
        extra = ExtraInfo(
            ack.start_offset,
            ack.pop_time,
            ack.invisible_time,
            ack.revive_queue_id,
            ack.retry,
            broker_name or self.broker_config.broker_name,
            ack.queue_id,
        )
        self.check_queue(ack.consumer_group, topic, ack.queue_id, extra)
        low = self.store.get_min_offset_in_queue(topic, ack.queue_id)
        high = self.store.get_max_offset_in_queue(topic, ack.queue_id)
        offsets = [o for o in offsets if low <= o <= high]
        if offsets:
            await self.ack(ctx, ack.consumer_group, topic, ack.queue_id, extra, offsets)

    # -- shared with CHANGE_MESSAGE_INVISIBLETIME ------------------------------------------

    def parse_extra_info(self, text: str) -> ExtraInfo:
        """The extra info, or AckRefusedError (INVALID_PARAMETER) saying what is wrong."""
        try:
            extra = ExtraInfo.parse(text)
        except ExtraInfoError as exc:
            raise AckRefusedError(ResponseCode.INVALID_PARAMETER, str(exc)) from exc
        self._check_broker(extra.broker_name)
        if not (
            0 <= extra.revive_qid < self.broker_config.revive_queue_num
            or extra.revive_qid == POP_ORDER_REVIVE_QUEUE
        ):
            raise AckRefusedError(
                ResponseCode.INVALID_PARAMETER,
                f"extraInfo {text!r} names revive queue {extra.revive_qid}, not one of "
                f"0..{self.broker_config.revive_queue_num - 1} (or 999 for FIFO)",
            )
        return extra

    def _check_broker(self, broker_name: str) -> None:
        if broker_name != self.broker_config.broker_name:
            raise AckRefusedError(
                ResponseCode.INVALID_PARAMETER,
                f"the receipt is broker {broker_name}'s, not this broker's "
                f"({self.broker_config.broker_name}): ack it there",
            )

    def check_queue(self, group: str, topic: str, queue_id: int, extra: ExtraInfo) -> str:
        """The topic the message really lives in (its POP retry topic when the extra info
        says so) after RocketMQ's checks of topic and queue id."""
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic = extra.real_topic(topic, group)
        topic_config = self.topic_config_manager.select_topic_config(topic)
        if topic_config is None:
            raise AckRefusedError(
                ResponseCode.TOPIC_NOT_EXIST,
                f"topic[{topic}] not exist, apply first please! {FAQ_SUGGESTION}",
            )
        if not 0 <= queue_id < topic_config.read_queue_nums:
            raise AckRefusedError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] "
                f"topicConfig.readQueueNums:[{topic_config.read_queue_nums}]",
            )
        return topic

    def check_offset(self, topic: str, queue_id: int, offset: int, code: int) -> None:
        low = self.store.get_min_offset_in_queue(topic, queue_id)
        high = self.store.get_max_offset_in_queue(topic, queue_id)
        if not low <= offset <= high:
            raise AckRefusedError(
                code,
                f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{low}~{high}",
            )

    async def ack(
        self,
        ctx: ChannelContext,
        group: str,
        topic: str,
        queue_id: int,
        extra: ExtraInfo,
        offsets: list[int],
    ) -> None:
        """Ack ``offsets`` of the check point ``extra`` names: in memory, then in the revive
        log; FIFO acks through the order info."""
        if extra.is_order:
            for offset in offsets:
                await self.ack_orderly(ctx, group, topic, queue_id, offset, extra.pop_time)
            return
        ack = AckMsg(
            group,
            topic,
            queue_id,
            extra.ck_queue_offset,
            extra.pop_time,
            offsets,
            extra.broker_name,
        )
        self.ack_count += len(offsets)
        if not self.revive_service.ack(ack):
            return  # revived or acked already: nothing to record
        msg = revive_record(
            self.revive_service.revive_topic,
            extra.revive_qid,
            ack,
            self.store.commit_log.store_host,
            self.clock.now_ms(),
        )
        result = await self.store.async_put_message(msg)
        if not result.is_ok:
            raise AckRefusedError(
                ResponseCode.SYSTEM_ERROR, f"the ack could not be stored: {result.status.name}"
            )

    async def ack_orderly(
        self,
        ctx: ChannelContext,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        pop_time: int,
    ) -> None:
        """RocketMQ's ackOrderly: move the group's offset to the first message of the batch
        not acked yet, and let the queue's next batch go once the batch is done."""
        old = self.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < old:
            return
        next_offset = self.order_info_manager.commit_and_next(
            topic, group, queue_id, offset, pop_time
        )
        if next_offset == ILLEGAL_OFFSET:
            raise AckRefusedError(
                ResponseCode.MESSAGE_ILLEGAL,
                f"offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, "
                f"commit:{offset}, next:{next_offset}, {ctx.remote_address}",
            )
        if next_offset < 0:
            return
        self.ack_count += 1
        if next_offset != old:
            self.consumer_offset_manager.commit_offset(
                ctx.remote_address, group, topic, queue_id, next_offset
            )
            # Journal the move, so a restart before consumerOffset.json is saved does not
            # hand out the acked messages again.
            record = AckMsg(group, topic, queue_id, next_offset, pop_time, [next_offset])
            msg = revive_record(
                self.revive_service.revive_topic,
                0,
                record,
                self.store.commit_log.store_host,
                self.clock.now_ms(),
                tag=ORDER_ACK_TAG,
            )
            await self.store.async_put_message(msg)
        if not self.order_info_manager.check_block(None, topic, group, queue_id):
            self.long_polling.notify_message_arriving(topic, queue_id, group)
