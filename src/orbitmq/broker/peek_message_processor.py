"""``PeekMessageProcessor``: PEEK_MESSAGE (200052) — look at the messages a group would pop
next, without popping them (RocketMQ 5's ``PeekMessageProcessor``): from the group's offset
in one queue (or every queue with -1) and, as RocketMQ does, sometimes first from its POP
retry topic. SUCCESS with the messages, or PULL_NOT_FOUND."""

from __future__ import annotations

import random
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.pop_batch_reader import PopBatchReader
from orbitmq.broker.pop_message_processor import check_topic_and_group
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.clock import Clock
from orbitmq.common.key_builder import build_pop_retry_topic
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.header import (
    POP_MAX_MSG_NUMS,
    PeekMessageRequestHeader,
    PopMessageResponseHeader,
)
from orbitmq.protocol.perm_name import is_readable
from orbitmq.protocol.processor_codes import PEEK_MESSAGE_CODES
from orbitmq.remoting import ChannelContext
from orbitmq.store import MessageStore


class PeekMessageProcessor:
    """Answers PEEK_MESSAGE. Use from the broker's event loop only."""

    REQUEST_CODES: Final = PEEK_MESSAGE_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        reader: PopBatchReader,
        clock: Clock,
    ) -> None:
        self.broker_config = broker_config
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.reader = reader
        self.clock = clock
        self._random = random.Random()

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = PeekMessageRequestHeader.from_ext_fields(request.ext_fields)
        response = RemotingCommand.create_response(request, ResponseCode.SUCCESS)
        if not is_readable(self.broker_config.broker_permission):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker_config.broker_ip1}] peeking message is forbidden",
            )
            return response
        if not 0 < header.max_msg_nums <= POP_MAX_MSG_NUMS:
            response.set_code_and_remark(
                ResponseCode.INVALID_PARAMETER,
                f"maxMsgNums {header.max_msg_nums} is not in 1..{POP_MAX_MSG_NUMS}",
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
        draw = self._random.randrange(100)
        queues = [(header.topic, header.queue_id)]
        if header.queue_id < 0:
            n = topic_config.read_queue_nums
            queues = [(header.topic, (draw + i) % n) for i in range(n)]
        retry = (build_pop_retry_topic(header.topic, header.consumer_group), 0)
        queues = [retry, *queues] if draw % 5 == 0 else [*queues, retry]
        records: list[bytes | memoryview] = []
        rest = 0
        for topic, queue_id in queues:
            rest += self._peek(header, topic, queue_id, records)
        response.code = ResponseCode.SUCCESS if records else ResponseCode.PULL_NOT_FOUND
        response.remark = "FOUND" if records else "NO_MESSAGE_IN_QUEUE"
        fields = PopMessageResponseHeader(
            pop_time=self.clock.now_ms(), invisible_time=0, revive_qid=0, rest_num=rest
        )
        response.ext_fields.update(fields.to_ext_fields())
        response.body = b"".join(records)
        return response

    def _peek(
        self,
        header: PeekMessageRequestHeader,
        topic: str,
        queue_id: int,
        records: list[bytes | memoryview],
    ) -> int:
        if self.store.find_consume_queue(topic, queue_id) is None:
            return 0
        group = header.consumer_group
        offset = self.reader.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = self.store.get_min_offset_in_queue(topic, queue_id)
        wanted = header.max_msg_nums - len(records)
        if wanted > 0:
            result = self.store.get_message(group, topic, queue_id, offset, wanted)
            records += result.message_buffers
            offset = result.next_begin_offset if result.message_buffers else offset
        return max(self.store.get_max_offset_in_queue(topic, queue_id) - offset, 0)
