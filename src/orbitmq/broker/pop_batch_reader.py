"""``PopBatchReader``: the reading half of POP_MESSAGE (RocketMQ 5's ``popMsgFromQueue``):
which queues a POP reads, from which offset, and what it leaves behind (a check point per
queue, or FIFO POP's order info), gathered in a ``PopBatch``.

Everything here is synchronous and runs on the broker's event loop, so a queue's read, its
offset commit and its check point's registration happen with no other request in between:
two POPs never hand out the same message. The check points' writes to the revive log come
after (``PopMessageProcessor``), and a crash before they end is covered by the revive log's
replay and the consumer offsets it restores.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.consumer_order_info_manager import ConsumerOrderInfoManager
from orbitmq.broker.pop_check_point import PopCheckPoint
from orbitmq.broker.pop_revive_service import PopReviveService
from orbitmq.common import decode_message, encode_message
from orbitmq.common import message_const as mc
from orbitmq.common.key_builder import POP_ORDER_REVIVE_QUEUE, build_pop_retry_topic
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.protocol.header import CONSUME_INIT_MODE_MIN, PopMessageRequestHeader
from orbitmq.protocol.pop_extra_info import ExtraInfo, msg_offset_entry, start_offset_entry
from orbitmq.store import GetMessageResult, GetMessageStatus, MessageFilter, MessageStore

#: Statuses after which the stored offset is wrong and POP starts again where the store says.
_OFFSET_WRONG: Final = frozenset(
    {
        GetMessageStatus.OFFSET_TOO_SMALL,
        GetMessageStatus.OFFSET_OVERFLOW_BADLY,
        GetMessageStatus.OFFSET_FOUND_NULL,
    }
)
#: Statuses after which POP moves past what it skipped (filtered out, removed).
_SKIPPED: Final = frozenset(
    {
        GetMessageStatus.NO_MATCHED_MESSAGE,
        GetMessageStatus.OFFSET_FOUND_NULL,
        GetMessageStatus.MESSAGE_WAS_REMOVING,
        GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
    }
)


@dataclass(slots=True)
class PopBatch:
    """What one POP read: the records for the answer's body, the check points to write,
    the answer's info strings and how many messages remain."""

    pop_time: int
    revive_qid: int
    records: list[bytes | memoryview] = field(default_factory=list)
    check_points: list[PopCheckPoint] = field(default_factory=list)
    start_offset_info: list[str] = field(default_factory=list)
    msg_offset_info: list[str] = field(default_factory=list)
    order_count_info: list[str] = field(default_factory=list)
    rest_num: int = 0

    @property
    def count(self) -> int:
        return len(self.records)


class PopBatchReader:
    """Reads POP batches for ``PopMessageProcessor``. Event-loop confined."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        consumer_offset_manager: ConsumerOffsetManager,
        order_info_manager: ConsumerOrderInfoManager,
        revive_service: PopReviveService,
    ) -> None:
        self.broker_config = broker_config
        self.store = store
        self.consumer_offset_manager = consumer_offset_manager
        self.order_info_manager = order_info_manager
        self.revive_service = revive_service
        self._random = random.Random()
        self._ck_number = 0

    def read(
        self,
        header: PopMessageRequestHeader,
        read_queue_nums: int,
        message_filter: MessageFilter,
        pop_time: int,
    ) -> PopBatch:
        """Pop from the topic (one queue, or all with queue id -1) and its POP retry topic:
        first from the retry topic popFromRetryProbability % of the time, else after the
        topic when the batch is not full yet (RocketMQ's rule); never for FIFO POP."""
        if header.order:
            revive_qid = POP_ORDER_REVIVE_QUEUE
        else:
            revive_qid = self._ck_number % self.broker_config.revive_queue_num
            self._ck_number += 1
        batch = PopBatch(pop_time, revive_qid)
        draw = self._random.randrange(100)
        retry_first = draw < self.broker_config.pop_from_retry_probability
        retry_topic = build_pop_retry_topic(header.topic, header.consumer_group)
        if retry_first and not header.order:
            self._read_queue(header, retry_topic, 0, message_filter, batch)
        if header.queue_id < 0:
            for i in range(read_queue_nums):
                queue_id = (draw + i) % read_queue_nums
                self._read_queue(header, header.topic, queue_id, message_filter, batch)
        else:
            self._read_queue(header, header.topic, header.queue_id, message_filter, batch)
        if not retry_first and not header.order and batch.count < header.max_msg_nums:
            self._read_queue(header, retry_topic, 0, message_filter, batch)
        return batch

    def pop_offset(self, group: str, topic: str, queue_id: int, init_mode: int) -> int:
        """The group's POP offset in the queue; a group without one starts as RocketMQ's
        getInitOffset says (initMode MIN or a retry topic: the first message; MAX: the
        last one, or the first when the queue still starts at 0) and commits it."""
        offset = self.consumer_offset_manager.query_offset(group, topic, queue_id)
        if offset >= 0:
            return offset
        min_offset = self.store.get_min_offset_in_queue(topic, queue_id)
        if init_mode == CONSUME_INIT_MODE_MIN or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            offset = min_offset
        elif min_offset <= 0:
            # RocketMQ's initPopOffsetByCheckMsgInMem: the queue's first message is still
            # there (OrbitMQ keeps no page-cache view: a queue starting at 0 counts).
            offset = 0
        else:
            offset = max(self.store.get_max_offset_in_queue(topic, queue_id) - 1, 0)
        self.consumer_offset_manager.commit_offset("getPopOffset", group, topic, queue_id, offset)
        return offset

    def _read_queue(
        self,
        header: PopMessageRequestHeader,
        topic: str,
        queue_id: int,
        message_filter: MessageFilter,
        batch: PopBatch,
    ) -> None:
        group = header.consumer_group
        if self.store.find_consume_queue(topic, queue_id) is None:
            return
        offset = self.pop_offset(group, topic, queue_id, header.init_mode)
        if batch.count >= header.max_msg_nums:
            batch.rest_num += self.store.get_max_offset_in_queue(topic, queue_id) - offset
            return
        if header.order and self.order_info_manager.check_block(
            header.attempt_id, topic, group, queue_id
        ):
            return
        wanted = header.max_msg_nums - batch.count
        result = self.store.get_message(group, topic, queue_id, offset, wanted, message_filter)
        if result.status in _OFFSET_WRONG:
            offset = result.next_begin_offset
            self._commit(group, topic, queue_id, offset)
            result = self.store.get_message(group, topic, queue_id, offset, wanted, message_filter)
        if result.message_buffers:
            self._take(header, topic, queue_id, offset, result, batch)
        elif result.status in _SKIPPED and result.next_begin_offset > offset:
            self._commit(group, topic, queue_id, result.next_begin_offset)
        batch.rest_num += max(result.max_offset - result.next_begin_offset, 0)

    def _take(
        self,
        header: PopMessageRequestHeader,
        topic: str,
        queue_id: int,
        offset: int,
        result: GetMessageResult,
        batch: PopBatch,
    ) -> None:
        """Hand out what ``result`` found: commit the offset and leave the check point (or
        the order info) behind, and add the records and their infos to ``batch``."""
        group, offsets = header.consumer_group, result.message_queue_offsets
        if header.order:
            batch.order_count_info += self.order_info_manager.update(
                header.attempt_id,
                topic,
                group,
                queue_id,
                batch.pop_time,
                header.invisible_time,
                offsets,
            )
            # FIFO POP keeps the offset at the first message not acked.
            self._commit(group, topic, queue_id, offset)
        else:
            ck = PopCheckPoint(
                start_offset=offset,
                pop_time=batch.pop_time,
                invisible_time=header.invisible_time,
                queue_id=queue_id,
                topic=topic,
                cid=group,
                queue_offset_diff=[o - offset for o in offsets],
                broker_name=self.broker_config.broker_name,
            )
            # The offset moves before the check point's write starts: a consumerOffset.json
            # saved meanwhile never lacks a pop the revive log holds (see docs/design/pop.md).
            self._commit(group, topic, queue_id, result.next_begin_offset)
            self.revive_service.add_check_point(ck, batch.revive_qid)
            batch.check_points.append(ck)
        batch.start_offset_info.append(start_offset_entry(topic, queue_id, offset))
        batch.msg_offset_info.append(msg_offset_entry(topic, queue_id, offsets))
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            batch.records += self._as_original(header, topic, offset, result, batch)
        else:
            batch.records += result.message_buffers

    def _as_original(
        self,
        header: PopMessageRequestHeader,
        topic: str,
        offset: int,
        result: GetMessageResult,
        batch: PopBatch,
    ) -> list[bytes]:
        """Retry topic messages as RocketMQ 5 answers them (popResponseReturnActualRetryTopic
        false): under the topic asked for, with their POP_CK (the retry mark tells the ack
        where they really live)."""
        records = []
        for record in result.message_buffers:
            msg = decode_message(record)
            properties = dict(msg.properties)
            extra = ExtraInfo.build(
                ck_queue_offset=offset,
                pop_time=batch.pop_time,
                invisible_time=header.invisible_time,
                revive_qid=batch.revive_qid,
                topic=topic,
                broker_name=self.broker_config.broker_name,
                queue_id=msg.queue_id,
                queue_offset=msg.queue_offset,
            )
            properties.setdefault(mc.PROPERTY_POP_CK, str(extra))
            msg.topic = header.topic
            msg.properties = properties
            records.append(encode_message(msg))
        return records

    def _commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.consumer_offset_manager.commit_offset("PopMessage", group, topic, queue_id, offset)
