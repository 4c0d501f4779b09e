"""TransactionalMessageCheckService: asks producers about halves nobody resolved (SPEC R35,
RocketMQ's TransactionalMessageCheckService and the check of its
TransactionalMessageServiceImpl).

Every ``transactionCheckInterval`` ms (and at start) the half queue is walked from the first
half not known resolved. A half younger than ``transactionTimeOut`` ms (or its own
CHECK_IMMUNITY_TIME_IN_SECONDS) is not asked about yet. A half already checked
``transactionCheckMax`` times (TRANSACTION_CHECK_TIMES) is stored in
TRANS_CHECK_MAX_TIME_TOPIC (1 queue, perm 6, body, keys and properties kept), recorded as
done and counted. Any other half is stored again at the half queue's end with the count one
higher, the old one recorded as done (RocketMQ's putBackHalfMsgQueue: the new offset is the
one in flight, so no half is asked about twice at once), and CHECK_TRANSACTION_STATE goes
oneway to one live producer of its group, naming the new half. The producer answers with
END_TRANSACTION (fromTransactionCheck); UNKNOWN changes nothing, so the half is asked about
again next interval. Progress is the op topic (through ``TransactionalMessageService``), so
restarts keep it.

Deliberately unlike RocketMQ 4.9.8: a half whose producer group has no live producer is not
counted and waits until one registers (RocketMQ counts such rounds and discards after the
max, losing transactions whose producers were down for a while). A late answer naming an
older copy of a half put back reaches its current copy, and a late commit of a discarded
half is still stored, once (both in ``TransactionalMessageService``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.broker.transactional_message_service import TransactionalMessageService
from orbitmq.common import MessageExt, MessageExtBrokerInner, message_properties_to_string
from orbitmq.common import message_const as mc
from orbitmq.common.clock import Clock
from orbitmq.common.message_decoder import decode_message, encode_message
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.common.topic import RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, RMQ_SYS_TRANS_HALF_TOPIC
from orbitmq.protocol import RemotingCommand, RequestCode
from orbitmq.protocol.header import CheckTransactionStateRequestHeader
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.remoting import ChannelContext
from orbitmq.store import GetMessageStatus, MessageStore

log = logging.getLogger(__name__)

_HALF_QUEUE_ID: Final = 0
_READ_BATCH: Final = 32


class TransactionalMessageCheckService:
    """Owns the check task, the queue offset of the first half not known resolved and the
    count of halves discarded after ``transactionCheckMax`` checks (``discarded_count``).
    For the broker's event loop: one pass at a time, and every half is claimed (recorded as
    resolved) before any await, so an END_TRANSACTION arriving meanwhile cannot race it."""

    def __init__(
        self,
        store: MessageStore,
        transactional_message_service: TransactionalMessageService,
        producer_manager: ProducerManager,
        topic_config_manager: TopicConfigManager,
        broker_config: BrokerConfig,
        *,
        clock: Clock,
    ) -> None:
        self._store = store
        self._service = transactional_message_service
        self._producers = producer_manager
        self._topics = topic_config_manager
        self._config = broker_config
        self._clock = clock
        self._first_unresolved = 0
        self._task: asyncio.Task[None] | None = None
        self._pass_lock = asyncio.Lock()
        self.discarded_count = 0

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="TransactionalMessageCheckService")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _run(self) -> None:
        try:
            await self.check()  # at start: halves left by the last run are due already
        except Exception:
            log.exception("transaction check failed")
        await run_every(
            lambda: self._config.transaction_check_interval / 1000, self.check, "transaction check"
        )

    async def check(self) -> None:
        """One pass over the halves stored before it began (a half put back during the pass
        waits for the next one)."""
        async with self._pass_lock:
            store = self._store
            end = store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, _HALF_QUEUE_ID)
            offset = max(
                self._first_unresolved,
                store.get_min_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, _HALF_QUEUE_ID),
            )
            now = self._clock.now_ms()
            all_done_so_far = True
            while offset < end:
                result = store.get_message(
                    "", RMQ_SYS_TRANS_HALF_TOPIC, _HALF_QUEUE_ID, offset, _READ_BATCH
                )
                if result.status is not GetMessageStatus.FOUND:
                    break
                for buffer in result.message_buffers:
                    half = decode_message(buffer)
                    if half.queue_offset >= end:
                        break
                    unresolved = not self._service.is_resolved(half.queue_offset)
                    if unresolved and not await self._check_half(half, now):
                        return  # younger halves follow: RocketMQ's walk stops too
                    if all_done_so_far and self._service.is_resolved(half.queue_offset):
                        self._first_unresolved = half.queue_offset + 1
                    else:
                        all_done_so_far = False
                if result.next_begin_offset <= offset:
                    break
                offset = result.next_begin_offset

    async def _check_half(self, half: MessageExt, now_ms: int) -> bool:
        """Discard, ask about or leave one unresolved half; False when it is too young and
        carries no immunity time of its own, so that the walk stops there."""
        age_ms = now_ms - half.born_timestamp
        immunity_ms = _immunity_ms(half, self._config.transaction_time_out)
        if 0 <= age_ms < immunity_ms:
            return mc.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS in half.properties
        times = _check_times(half)
        if times >= self._config.transaction_check_max:
            await self._discard(half)
            return True
        group = half.properties.get(mc.PROPERTY_PRODUCER_GROUP, "")
        channel = self._producers.get_available_channel(group)
        if channel is None:
            return True  # waits for a producer of its group, uncounted
        renewed = await self._service.resolve(half, _renewed_half(half, times + 1), put_back=True)
        if renewed is None or not renewed.status.is_ok:
            log.warning("putting back half %d failed: %s", half.queue_offset, renewed)
            return True
        assert renewed.append_result is not None
        new_half = self._store.look_message_by_offset(renewed.append_result.wrote_offset)
        if new_half is not None:
            self._send_check(channel, new_half)
        return True

    async def _discard(self, half: MessageExt) -> None:
        """RocketMQ's resolveDiscardMsg: the half kept in TRANS_CHECK_MAX_TIME_TOPIC."""
        self._topics.create_topic_in_send_message_back_method(
            RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 1, PERM_READ | PERM_WRITE, 0
        )
        kept = _copy_half(half, RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC, 0, dict(half.properties))
        result = await self._service.resolve(half, kept, discarded=True)
        if result is not None and result.status.is_ok:
            self.discarded_count += 1
            log.warning(
                "half %d (transaction %s) checked %d times: moved to %s",
                half.queue_offset,
                half.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
                self._config.transaction_check_max,
                RMQ_SYS_TRANS_CHECK_MAX_TIME_TOPIC,
            )
        else:
            log.warning("discarding half %d failed: %s", half.queue_offset, result)

    def _send_check(self, channel: ChannelContext, half: MessageExt) -> None:
        """CHECK_TRANSACTION_STATE with the fields RocketMQ's sendCheckMessage sets; the
        body is the half as a stored record, in its real topic and queue."""
        uniq_key = half.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset,
            commit_log_offset=half.commit_log_offset,
            msg_id=uniq_key,
            transaction_id=uniq_key,
            offset_msg_id=half.msg_id,
            broker_name=self._config.broker_name,
        )
        half.topic = half.properties.get(mc.PROPERTY_REAL_TOPIC, half.topic)
        half.queue_id = int(half.properties.get(mc.PROPERTY_REAL_QUEUE_ID, half.queue_id))
        half.store_size = 0
        request = RemotingCommand.create_request(
            RequestCode.CHECK_TRANSACTION_STATE, header.to_ext_fields(), encode_message(half)
        )
        try:
            channel.invoke_oneway(request)
        except Exception:  # a channel closing now: the next interval asks again
            log.warning("sending CHECK_TRANSACTION_STATE to %s failed", channel.remote_address)


def _check_times(half: MessageExt) -> int:
    text = half.properties.get(mc.PROPERTY_TRANSACTION_CHECK_TIMES, "0")
    return int(text) if text.isdigit() else 0


def _immunity_ms(half: MessageExt, transaction_timeout_ms: int) -> int:
    """RocketMQ's getImmunityTime: the half's own seconds, else the broker's timeout."""
    text = half.properties.get(mc.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
    return int(text) * 1000 if text is not None and text.isdigit() else transaction_timeout_ms


def _renewed_half(half: MessageExt, check_times: int) -> MessageExtBrokerInner:
    """RocketMQ's renewHalfMessageInner: the same half, checked once more."""
    properties = dict(half.properties)
    properties[mc.PROPERTY_TRANSACTION_CHECK_TIMES] = str(check_times)
    return _copy_half(half, half.topic, half.queue_id, properties)


def _copy_half(
    half: MessageExt, topic: str, queue_id: int, properties: dict[str, str]
) -> MessageExtBrokerInner:
    # A broker-side put: it must not wait for a sync flush.
    properties[mc.PROPERTY_WAIT_STORE_MSG_OK] = "false"
    return MessageExtBrokerInner(
        topic,
        body=half.body,
        flag=half.flag,
        properties=properties,
        queue_id=queue_id,
        sys_flag=half.sys_flag,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        properties_string=message_properties_to_string(properties),
    )
