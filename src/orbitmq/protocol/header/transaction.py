"""Headers of transactional messages: the producer's verdict on a half message, and the
broker's question about one whose verdict has not come."""

from __future__ import annotations

from typing import Final

from orbitmq.common.sys_flag import (
    TRANSACTION_COMMIT_TYPE,
    TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
)
from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field
from orbitmq.protocol.header.errors import HeaderError

_VERDICTS: Final = frozenset(
    {TRANSACTION_NOT_TYPE, TRANSACTION_COMMIT_TYPE, TRANSACTION_ROLLBACK_TYPE}
)


class EndTransactionRequestHeader(CommandHeader):
    """END_TRANSACTION (37): commit or roll back the half message at ``commit_log_offset``.

    ``commit_or_rollback`` is a sys-flag transaction type: 8 commit, 12 rollback, 0 unknown
    (the broker asks again later). ``from_transaction_check`` is set when this answers the
    broker's CHECK_TRANSACTION_STATE.
    """

    producer_group: str = ext_field("producerGroup")
    tran_state_table_offset: int = ext_field("tranStateTableOffset")
    commit_log_offset: int = ext_field("commitLogOffset")
    commit_or_rollback: Int32 = ext_field("commitOrRollback")
    from_transaction_check: bool = ext_field("fromTransactionCheck", default=False)
    msg_id: str = ext_field("msgId")
    transaction_id: str | None = ext_field("transactionId", default=None)
    broker_name: str | None = ext_field("bname", default=None)

    def check(self) -> None:
        if self.commit_or_rollback not in _VERDICTS:
            raise HeaderError(
                "commitOrRollback",
                str(self.commit_or_rollback),
                "is not 0 (unknown), 8 (commit) or 12 (rollback)",
            )


class CheckTransactionStateRequestHeader(CommandHeader):
    """CHECK_TRANSACTION_STATE (39), broker to producer: what became of this half message?
    The body is the half message itself."""

    tran_state_table_offset: int = ext_field("tranStateTableOffset")
    commit_log_offset: int = ext_field("commitLogOffset")
    msg_id: str | None = ext_field("msgId", default=None)
    transaction_id: str | None = ext_field("transactionId", default=None)
    offset_msg_id: str | None = ext_field("offsetMsgId", default=None)
    broker_name: str | None = ext_field("bname", default=None)
