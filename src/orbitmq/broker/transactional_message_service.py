"""Half messages and their resolution (SPEC R35, the store and END_TRANSACTION part):

- a send with TRAN_MSG=true is stored invisibly in RMQ_SYS_TRANS_HALF_TOPIC queue 0, its real
  topic and queue kept in REAL_TOPIC / REAL_QID (RocketMQ's parseHalfMessageInner);
- END_TRANSACTION commit stores the message again in its real topic and queue (TRAN_MSG
  cleared, PREPAREDTRANSACTIONOFFSET pointing at the half), then records the half as done;
  rollback only records it. The record is an op message in RMQ_SYS_TRANS_OP_HALF_TOPIC, tag
  ``d``, body the half's queue offset (RocketMQ's layout).

Also beyond RocketMQ: a batch send with TRAN_MSG=true among the batch's own properties is
staged as one half whose body is the batch (``ORBITMQ_HALF_BATCH`` says how many messages it
holds); its commit stores the batch in the real queue, consecutively, with one verdict. The
Spark sink's exactlyOnce stages its rows this way.

Better than RocketMQ's: resolving a half twice (a commit retried after a lost answer) is
answered SUCCESS without storing it again; the set of done halves is rebuilt from the op
topic at start, so this holds across restarts. Halves nobody resolved are asked about by
``TransactionalMessageCheckService`` (CHECK_TRANSACTION_STATE), which resolves them here too.
A half it discarded after ``transactionCheckMax`` checks (its op message says so) may still
be committed, once, by a late verdict: RocketMQ's brokers store such a commit too (they do
not look at the op topic), and a commit answered SUCCESS must not be lost.
"""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.common import (
    MessageExt,
    MessageExtBatch,
    MessageExtBrokerInner,
    count_batch_messages,
    message_properties_to_string,
)
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.message_decoder import decode_message
from orbitmq.common.record_layout import BATCH_ITEM_PREFIX, HOST_V6_FLAGS, calc_msg_length
from orbitmq.common.topic import RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC
from orbitmq.protocol import ResponseCode
from orbitmq.protocol.header import EndTransactionRequestHeader
from orbitmq.store import GetMessageStatus, MessageStore, PutMessageResult

log = logging.getLogger(__name__)

#: The op message tag that marks a half as resolved (TransactionalMessageUtil.REMOVETAG).
REMOVE_TAG: Final = "d"
_HALF_QUEUE_ID: Final = 0
_LOAD_BATCH: Final = 256


class TransactionalMessageService:
    """Owns the set of resolved half messages (their queue offsets in the half topic) and
    turns sends and END_TRANSACTION into store puts. For the broker's event loop: a half is
    marked before any await, so two resolutions of it at once cannot both store it."""

    def __init__(self, store: MessageStore) -> None:
        self._store = store
        self._resolved: set[int] = set()
        #: Halves the check-back put back: half queue offset -> the offset of its new copy.
        self._put_back: dict[int, int] = {}
        #: Halves the check-back discarded after transactionCheckMax checks and no commit
        #: made visible since: resolved, but a late commit still stores them.
        self._discarded: set[int] = set()

    def load(self) -> None:
        """Rebuild the resolved set from the op topic (at broker start)."""
        store = self._store
        offset = store.get_min_offset_in_queue(RMQ_SYS_TRANS_OP_HALF_TOPIC, _HALF_QUEUE_ID)
        end = store.get_max_offset_in_queue(RMQ_SYS_TRANS_OP_HALF_TOPIC, _HALF_QUEUE_ID)
        while offset < end:
            result = store.get_message(
                "", RMQ_SYS_TRANS_OP_HALF_TOPIC, _HALF_QUEUE_ID, offset, _LOAD_BATCH
            )
            if result.status is not GetMessageStatus.FOUND or result.next_begin_offset <= offset:
                break
            for buffer in result.message_buffers:
                op = decode_message(buffer)
                if op.properties.get(mc.PROPERTY_TAGS) == REMOVE_TAG:
                    half_offset = int(op.body.decode())
                    self._resolved.add(half_offset)
                    moved_to = op.properties.get(mc.PROPERTY_PUT_BACK_TO)
                    if moved_to is not None and moved_to.isdigit():
                        self._put_back[half_offset] = int(moved_to)
                    if op.properties.get(mc.PROPERTY_TRANSACTION_DISCARDED) == "true":
                        self._discarded.add(half_offset)
                    else:  # a late commit of a discarded half settled it
                        self._discarded.discard(half_offset)
            offset = result.next_begin_offset
        if self._resolved:
            log.info("%d resolved half messages known from the op topic", len(self._resolved))

    @staticmethod
    def to_half(msg: MessageExtBrokerInner) -> MessageExtBrokerInner:
        """The half message a transactional send stores instead of ``msg``."""
        real = {mc.PROPERTY_REAL_TOPIC: msg.topic, mc.PROPERTY_REAL_QUEUE_ID: str(msg.queue_id)}
        msg.properties.update(real)
        # The stored string the send built, plus the two: nothing else changed.
        msg.properties_string += message_properties_to_string(real)
        msg.sys_flag = (msg.sys_flag & ~sf.TRANSACTION_ROLLBACK_TYPE) | sf.TRANSACTION_NOT_TYPE
        msg.topic = RMQ_SYS_TRANS_HALF_TOPIC
        msg.queue_id = _HALF_QUEUE_ID
        return msg

    def batch_to_half(self, batch: MessageExtBatch) -> MessageExtBrokerInner:
        """The one half message a transactional batch send stores: the batch's body, its own
        properties. Raises MessageFormatError when the body is not a well-formed batch, or
        when its messages, stored at the commit, could go over maxMessageSize: it is
        checked now, because the commit of a half that was acknowledged must not fail."""
        count = count_batch_messages(batch.body)
        if count == 0:
            raise MessageFormatError("the batch holds no message")
        properties = {
            k: v for k, v in batch.properties.items() if k != mc.PROPERTY_WAIT_STORE_MSG_OK
        }
        text = message_properties_to_string(properties)
        # Each message is stored with a record's fixed fields (IPv6 hosts, the largest), the
        # topic and the batch's own properties, in place of its batch item's 22 bytes.
        extra = calc_msg_length(HOST_V6_FLAGS, 0, len(batch.topic.encode()), len(text.encode()) + 1)
        stored = len(batch.body) + count * (extra - BATCH_ITEM_PREFIX.size - 2)
        limit = self._store.config.max_message_size
        if stored > limit:
            raise MessageFormatError(
                f"its {count} messages would take up to {stored} bytes when committed, over"
                f" maxMessageSize {limit}: stage fewer at a time"
            )
        counted = {mc.PROPERTY_HALF_BATCH: str(count)}
        properties.update(counted)
        half = MessageExtBrokerInner(
            batch.topic,
            body=batch.body,
            properties=properties,
            queue_id=batch.queue_id,
            sys_flag=batch.sys_flag,
            born_timestamp=batch.born_timestamp,
            born_host=batch.born_host,
            properties_string=text + message_properties_to_string(counted),
        )
        return self.to_half(half)

    def is_resolved(self, half_queue_offset: int) -> bool:
        return half_queue_offset in self._resolved

    async def end(self, header: EndTransactionRequestHeader) -> tuple[int, str | None]:
        """Commit or roll back the half ``header`` names: (response code, remark)."""
        half = self._store.look_message_by_offset(header.commit_log_offset)
        problem = _check_half(half, header)
        if problem is not None:
            return ResponseCode.SYSTEM_ERROR, problem
        assert half is not None
        # A verdict on a copy the check-back has put back is one on its current copy (a
        # producer's answer may cross the put-back); a half resolved otherwise is done.
        half = self._current_copy(half)
        commit = header.commit_or_rollback == sf.TRANSACTION_COMMIT_TYPE
        if half is not None and commit and half.queue_offset in self._discarded:
            return await self._commit_discarded(half)
        if half is None or half.queue_offset in self._resolved:
            return ResponseCode.SUCCESS, None  # resolved before: nothing to do again
        result = await self.resolve(half, _final_message(half) if commit else None)
        if result is not None and not result.status.is_ok:
            return ResponseCode.SYSTEM_ERROR, f"storing the committed message: {result}"
        return ResponseCode.SUCCESS, None

    async def _commit_discarded(self, half: MessageExt) -> tuple[int, str | None]:
        """A commit of a half the check-back discarded: stored as any commit (RocketMQ's
        EndTransactionProcessor does not look at the op topic, so a late commit still
        works there), once; a second op message records that for restarts."""
        offset = half.queue_offset
        self._discarded.discard(offset)  # before any await: one late commit stores it
        try:
            result = await self._store.async_put_message(_final_message(half))
            if not result.status.is_ok:
                self._discarded.add(offset)
                return ResponseCode.SYSTEM_ERROR, f"storing the committed message: {result}"
            await self._store.async_put_message(self._op_message(half, None))
        except BaseException:
            self._discarded.add(offset)
            raise
        log.warning("half %d, discarded after its checks, committed late", offset)
        return ResponseCode.SUCCESS, None

    def _current_copy(self, half: MessageExt) -> MessageExt | None:
        """``half``, or the copy the check-back put it back as (following every put-back);
        None when that copy cannot be read."""
        while half.queue_offset in self._put_back:
            unit = self._store.get_message_unit_in_queue(
                RMQ_SYS_TRANS_HALF_TOPIC, half.queue_id, self._put_back[half.queue_offset]
            )
            copy = self._store.look_message_by_offset(unit[0]) if unit is not None else None
            if copy is None:
                return None
            half = copy
        return half

    async def resolve(
        self,
        half: MessageExt,
        replacement: MessageExtBrokerInner | None,
        *,
        put_back: bool = False,
        discarded: bool = False,
    ) -> PutMessageResult | None:
        """Record ``half`` as done, storing ``replacement`` first (a commit's final message,
        a checked half put back, a discarded one): the replacement's put result (the half
        stays unresolved when it failed), None without one. The caller checks
        ``is_resolved`` first, with no await in between."""
        self._resolved.add(half.queue_offset)
        result = None
        try:
            moved_to = None
            if replacement is not None:
                result = await self._store.async_put_message(replacement)
                if not result.status.is_ok:
                    self._resolved.discard(half.queue_offset)
                    return result
                if put_back and result.append_result is not None:
                    moved_to = result.append_result.logics_offset
                    self._put_back[half.queue_offset] = moved_to
            await self._store.async_put_message(self._op_message(half, moved_to, discarded))
        except BaseException:
            self._resolved.discard(half.queue_offset)
            raise
        if discarded:
            self._discarded.add(half.queue_offset)
        return result

    def _op_message(
        self, half: MessageExt, moved_to: int | None, discarded: bool = False
    ) -> MessageExtBrokerInner:
        properties = {mc.PROPERTY_TAGS: REMOVE_TAG}
        if moved_to is not None:
            properties[mc.PROPERTY_PUT_BACK_TO] = str(moved_to)
        if discarded:
            properties[mc.PROPERTY_TRANSACTION_DISCARDED] = "true"
        return MessageExtBrokerInner(
            RMQ_SYS_TRANS_OP_HALF_TOPIC,
            body=str(half.queue_offset).encode(),
            properties=properties,
            queue_id=half.queue_id,
            born_host=half.store_host,
            store_host=half.store_host,
            properties_string=message_properties_to_string(properties),
        )


def _final_message(half: MessageExt) -> MessageExtBrokerInner:
    """RocketMQ's endMessageTransaction: the half in its real topic and queue; a staged
    batch as that batch."""
    properties = dict(half.properties)
    topic = properties.pop(mc.PROPERTY_REAL_TOPIC)
    queue_id = int(properties.pop(mc.PROPERTY_REAL_QUEUE_ID))
    properties.pop(mc.PROPERTY_TRANSACTION_PREPARED, None)
    staged_batch = properties.pop(mc.PROPERTY_HALF_BATCH, None) is not None
    kind = MessageExtBatch if staged_batch else MessageExtBrokerInner
    return kind(
        topic,
        body=half.body,
        flag=half.flag,
        properties=properties,
        queue_id=queue_id,
        sys_flag=(half.sys_flag & ~sf.TRANSACTION_ROLLBACK_TYPE) | sf.TRANSACTION_COMMIT_TYPE,
        born_timestamp=half.born_timestamp,
        born_host=half.born_host,
        store_host=half.store_host,
        reconsume_times=half.reconsume_times,
        prepared_transaction_offset=half.commit_log_offset,
        properties_string=message_properties_to_string(properties),
    )


def _check_half(half: MessageExt | None, header: EndTransactionRequestHeader) -> str | None:
    """RocketMQ's checkPrepareMessage, and that the message is a half at all."""
    if half is None or half.topic != RMQ_SYS_TRANS_HALF_TOPIC:
        return "Find prepared transaction message failed"
    if half.properties.get(mc.PROPERTY_PRODUCER_GROUP) != header.producer_group:
        return "The producer group wrong"
    if half.queue_offset != header.tran_state_table_offset:
        return "The transaction state table offset wrong"
    if half.commit_log_offset != header.commit_log_offset:
        return "The commit log offset wrong"
    return None
