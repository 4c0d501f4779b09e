"""``TransactionVerdict``: a producer's verdict on one half message, what
``Producer.end_transactions`` sends as END_TRANSACTION."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from orbitmq.client.send_result import SendResult
from orbitmq.common import decode_message_id
from orbitmq.common import sys_flag as sf
from orbitmq.protocol.header import EndTransactionRequestHeader


class LocalTransactionState(enum.Enum):
    """What becomes of a half message (RocketMQ's LocalTransactionState); the values are
    the sys-flag transaction types END_TRANSACTION carries."""

    COMMIT_MESSAGE = sf.TRANSACTION_COMMIT_TYPE
    ROLLBACK_MESSAGE = sf.TRANSACTION_ROLLBACK_TYPE
    #: Not known yet: the half stays staged and the broker checks back later.
    UNKNOW = sf.TRANSACTION_NOT_TYPE
    #: RocketMQ's spelling is UNKNOW; this is the same member under its English name.
    UNKNOWN = sf.TRANSACTION_NOT_TYPE


@dataclass(frozen=True, slots=True)
class TransactionVerdict:
    """Commit or roll back the half message ``msg_id`` that ``Producer.send_half`` stored
    for ``topic`` on broker ``broker_name``. Immutable, so safe to share."""

    broker_name: str
    topic: str
    #: The half's offset in the half topic's queue (RocketMQ's tranStateTableOffset): the
    #: send's ``queue_offset``.
    half_offset: int
    #: Where the half is stored (the offset in its ``offset_msg_id``).
    commit_log_offset: int
    #: The half's unique id (the send's ``msg_id``).
    msg_id: str
    state: LocalTransactionState
    #: The transaction id the broker's send answer gave (RocketMQ 5's brokers answer the
    #: UNIQ_KEY, 4.9.8's nothing); sent back as is, as RocketMQ's endTransaction does.
    transaction_id: str | None = None

    @classmethod
    def of_half(cls, result: SendResult, state: LocalTransactionState) -> TransactionVerdict:
        """The verdict ``state`` on the half that ``Producer.send_half`` answered with
        ``result``."""
        _host, commit_log_offset = decode_message_id(result.offset_msg_id)
        return cls(
            broker_name=result.message_queue.broker_name,
            topic=result.message_queue.topic,
            half_offset=result.queue_offset,
            commit_log_offset=commit_log_offset,
            msg_id=result.msg_id,
            state=state,
            transaction_id=result.transaction_id,
        )

    def header(self, producer_group: str) -> EndTransactionRequestHeader:
        """This verdict as END_TRANSACTION's header, with the fields RocketMQ's
        DefaultMQProducerImpl.endTransaction sets (bname included)."""
        return EndTransactionRequestHeader(
            producer_group=producer_group,
            tran_state_table_offset=self.half_offset,
            commit_log_offset=self.commit_log_offset,
            commit_or_rollback=self.state.value,
            msg_id=self.msg_id,
            transaction_id=self.transaction_id,
            broker_name=self.broker_name,
        )
