"""``PopReviveService``: popped messages that were not acked in time become visible again
(RocketMQ 5's ``PopReviveService``).

Every POP answer writes one check point per queue to the revive log
(``rmq_sys_REVIVE_LOG_<cluster>``, reviveQueueNum queues) and every ack an ack record. The
service keeps the check points in flight in memory (a heap by revive time) and applies acks
to them at once, so an ack that races the deadline is never lost to a read lag. When a
check point's invisible time is over, each message it covers that is not acked is written
again: to the group's POP retry topic (``%RETRY%<group>_<topic>``) with its reconsume times
counted, or, once they reached the group's retryMaxTimes, to ``%DLQ%<group>``.

The revive log is the journal: the service's progress in each revive queue is the consumer
offset of ``CID_RMQ_SYS_REVIVE_GROUP`` (the revive-log offset of the oldest check point
still in flight), and at start ``replay`` reads each revive queue from there to rebuild the
check points in flight and the acks they got.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.pop_check_point import AckMsg, CheckPointKey, PopCheckPoint
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common import (
    MessageExt,
    MessageExtBrokerInner,
    decode_message,
    message_properties_to_string,
)
from orbitmq.common import message_const as mc
from orbitmq.common.clock import Clock
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.key_builder import (
    ACK_TAG,
    BATCH_ACK_TAG,
    CK_TAG,
    REVIVE_GROUP,
    build_pop_retry_topic,
    parse_normal_topic,
)
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX, dlq_topic
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.store import GetMessageStatus, MessageStore

log = logging.getLogger(__name__)

#: RocketMQ's PopAckConstants.retryQueueNum: a POP retry topic has one queue.
POP_RETRY_QUEUE_NUM = 1
#: RocketMQ's MixAll.DLQ_QUEUE_NUMS_PER_GROUP.
DLQ_QUEUE_NUM = 1
#: Tag of OrbitMQ's FIFO ack record: a FIFO POP group's committed offset after an ack, so a
#: restart does not hand acked FIFO messages out again (RocketMQ keeps none).
ORDER_ACK_TAG = "oAck"
_READ_BATCH = 256


@dataclass(slots=True)
class ReplayReport:
    """What ``replay`` found: check points back in flight, and the consumer offsets the
    revive log proves were popped past (to be restored over an older consumerOffset.json)."""

    check_points: int
    acks: int
    popped_offsets: dict[tuple[str, str, int], int]


class PopReviveService:
    """Owns the check points in flight, their revive heap and the revive progress.

    Use from the broker's event loop only (``replay`` runs before serving, from a thread).
    """

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_offset_manager: ConsumerOffsetManager,
        revive_topic: str,
        clock: Clock,
    ) -> None:
        self.broker_config = broker_config
        self.store = store
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.revive_topic = revive_topic
        self.clock = clock
        self._pending: dict[CheckPointKey, tuple[int, PopCheckPoint]] = {}
        self._heap: list[tuple[int, int, CheckPointKey]] = []
        self._seq = 0
        self._task: asyncio.Task[None] | None = None
        #: Called with a topic and queue a revive wrote to (wakes POP long polling).
        self.on_revived: Callable[[str, int], None] | None = None
        self.revived_count = 0
        self.dlq_count = 0

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    # -- check points and acks -------------------------------------------------------------

    def add_check_point(self, ck: PopCheckPoint, revive_qid: int) -> None:
        """Hold ``ck`` until its revive time; its revive-log offset is not known before its
        write ends, so it is held at a lower bound (the queue's current end)."""
        ck.revive_offset = self.store.get_max_offset_in_queue(self.revive_topic, revive_qid)
        self._hold(ck, revive_qid)

    def _hold(self, ck: PopCheckPoint, revive_qid: int) -> None:
        key = ck.key
        if key in self._pending:
            return
        self._pending[key] = (revive_qid, ck)
        self._seq += 1
        heapq.heappush(self._heap, (ck.revive_time, self._seq, key))

    def ack(self, ack: AckMsg) -> bool:
        """Apply ``ack`` to its check point; False when none is in flight (revived already,
        fully acked, or never popped here)."""
        entry = self._pending.get(ack.key)
        if entry is None:
            return False
        ck = entry[1]
        for offset in ack.ack_offsets:
            ck.ack(offset)
        if ck.all_acked:
            del self._pending[ack.key]
        return True

    def find(self, key: CheckPointKey) -> PopCheckPoint | None:
        entry = self._pending.get(key)
        return entry[1] if entry is not None else None

    # -- the loop --------------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(
                run_every(
                    lambda: self.broker_config.revive_interval / 1000,
                    self.revive_once,
                    "revive popped messages",
                ),
                name="PopReviveService",
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self._commit_progress()

    async def revive_once(self) -> int:
        """Revive every check point whose time is over; how many messages went back."""
        now = self.clock.now_ms()
        revived = 0
        while self._heap and self._heap[0][0] <= now:
            _, _, key = heapq.heappop(self._heap)
            entry = self._pending.pop(key, None)
            if entry is None:
                continue  # acked in full meanwhile
            revived += await self._revive(*entry)
        self._commit_progress()
        if revived:
            # What was revived is written: persist the progress now, so a crash does not
            # replay (and hand out twice) check points already revived.
            await asyncio.to_thread(self.consumer_offset_manager.persist)
        return revived

    def _commit_progress(self) -> None:
        """Each revive queue's progress: the oldest check point in flight, else its end."""
        lowest: dict[int, int] = {}
        for qid, ck in self._pending.values():
            if ck.revive_offset < lowest.get(qid, ck.revive_offset + 1):
                lowest[qid] = ck.revive_offset
        for qid in range(self.broker_config.revive_queue_num):
            offset = lowest.get(qid)
            if offset is None:
                offset = self.store.get_max_offset_in_queue(self.revive_topic, qid)
            committed = self.consumer_offset_manager.query_offset(
                REVIVE_GROUP, self.revive_topic, qid
            )
            if offset != committed:
                self.consumer_offset_manager.commit_offset(
                    "PopReviveService", REVIVE_GROUP, self.revive_topic, qid, offset
                )

    async def _revive(self, qid: int, ck: PopCheckPoint) -> int:
        """Write again each message of ``ck`` not acked; a failed write holds the rest for
        the next round (what was written is marked done, as if acked)."""
        revived = 0
        for offset in ck.unacked_offsets():
            result = self.store.get_message(ck.cid, ck.topic, ck.queue_id, offset, 1)
            if result.status is not GetMessageStatus.FOUND or not result.message_buffers:
                log.warning("revive: %s@%d offset %d is gone", ck.topic, ck.queue_id, offset)
                continue
            msg = decode_message(result.message_buffers[0])
            if not await self._put_again(ck, msg):
                self._pending[ck.key] = (qid, ck)
                self._seq += 1
                retry_at = self.clock.now_ms() + self.broker_config.revive_interval
                heapq.heappush(self._heap, (retry_at, self._seq, ck.key))
                break
            ck.ack(offset)
            revived += 1
        return revived

    async def _put_again(self, ck: PopCheckPoint, msg: MessageExt) -> bool:
        """Write ``msg`` to the group's POP retry topic, or its DLQ after retryMaxTimes."""
        group_config = self.subscription_group_manager.get(ck.cid)
        max_times = group_config.retry_max_times if group_config is not None else 16
        if msg.reconsume_times >= max_times:
            topic, queue_nums = dlq_topic(ck.cid), DLQ_QUEUE_NUM
        elif ck.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            topic, queue_nums = ck.topic, POP_RETRY_QUEUE_NUM
        else:
            topic, queue_nums = build_pop_retry_topic(ck.topic, ck.cid), POP_RETRY_QUEUE_NUM
        if self.topic_config_manager.select_topic_config(topic) is None:
            # Creating a topic saves topics.json: off the loop.
            await asyncio.to_thread(
                self.topic_config_manager.create_topic_in_send_message_back_method,
                topic,
                queue_nums,
                PERM_READ | PERM_WRITE,
                0,
            )
        properties = dict(msg.properties)
        properties.setdefault(mc.PROPERTY_RETRY_TOPIC, parse_normal_topic(ck.topic, ck.cid))
        if msg.reconsume_times == 0 or mc.PROPERTY_FIRST_POP_TIME not in properties:
            properties[mc.PROPERTY_FIRST_POP_TIME] = str(ck.pop_time)
        properties.setdefault(mc.PROPERTY_ORIGIN_MESSAGE_ID, msg.msg_id)
        inner = MessageExtBrokerInner(
            topic,
            body=msg.body,
            flag=msg.flag,
            properties=properties,
            properties_string=message_properties_to_string(properties),
            queue_id=0,
            sys_flag=msg.sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
            reconsume_times=msg.reconsume_times + 1,
        )
        result = await self.store.async_put_message(inner)
        if not result.is_ok:
            log.warning("revive of %s into %s failed: %s", msg.msg_id, topic, result.status.name)
            return False
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            self.revived_count += 1
        else:
            self.dlq_count += 1
        if self.on_revived is not None:
            self.on_revived(topic, 0)
        return True

    # -- replay at start -------------------------------------------------------------------

    def replay(self, recovery_offsets: dict[int, int] | None) -> ReplayReport:
        """Rebuild the check points in flight from each revive queue, from the service's
        committed progress on; from ``recovery_offsets`` on (each revive queue's end when
        consumerOffset.json was last saved; None: the whole log), note the consumer offsets
        the check points prove popped. Runs before the broker serves."""
        report = ReplayReport(0, 0, {})
        for qid in range(self.broker_config.revive_queue_num):
            progress = self.consumer_offset_manager.query_offset(
                REVIVE_GROUP, self.revive_topic, qid
            )
            recover_from = (recovery_offsets or {}).get(qid, 0)
            start = min(max(progress, 0), recover_from)
            self._replay_queue(qid, start, max(progress, 0), recover_from, report)
        return report

    def _replay_queue(
        self, qid: int, start: int, progress: int, recover_from: int, report: ReplayReport
    ) -> None:
        offset = max(start, self.store.get_min_offset_in_queue(self.revive_topic, qid))
        end = self.store.get_max_offset_in_queue(self.revive_topic, qid)
        while offset < end:
            result = self.store.get_message(
                REVIVE_GROUP, self.revive_topic, qid, offset, _READ_BATCH
            )
            if not result.message_buffers:
                offset = max(result.next_begin_offset, offset + 1)
                continue
            for queue_offset, record in zip(
                result.message_queue_offsets, result.message_buffers, strict=True
            ):
                self._replay_record(qid, queue_offset, record, progress, recover_from, report)
            offset = result.next_begin_offset

    def _replay_record(
        self,
        qid: int,
        queue_offset: int,
        record: memoryview,
        progress: int,
        recover_from: int,
        report: ReplayReport,
    ) -> None:
        try:
            msg = decode_message(record)
            tag = msg.properties.get(mc.PROPERTY_TAGS)
            if tag == CK_TAG:
                ck = PopCheckPoint.from_json(msg.body)
                ck.revive_offset = queue_offset
                if queue_offset >= recover_from:
                    _note_popped(report, (ck.cid, ck.topic, ck.queue_id), ck.end_offset)
                if queue_offset >= progress:
                    self._hold(ck, qid)
                    report.check_points += 1
            elif tag in (ACK_TAG, BATCH_ACK_TAG):
                if self.ack(AckMsg.from_json(msg.body)):
                    report.acks += 1
            elif tag == ORDER_ACK_TAG and queue_offset >= recover_from:
                ack = AckMsg.from_json(msg.body)
                _note_popped(
                    report, (ack.consumer_group, ack.topic, ack.queue_id), ack.ack_offsets[0]
                )
        except (ValueError, KeyError, TypeError, MessageFormatError) as exc:
            log.warning("revive log %d@%d: unreadable record skipped: %s", qid, queue_offset, exc)


def _note_popped(report: ReplayReport, key: tuple[str, str, int], offset: int) -> None:
    if offset > report.popped_offsets.get(key, -1):
        report.popped_offsets[key] = offset
