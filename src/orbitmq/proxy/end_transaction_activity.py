"""``EndTransactionActivity``: the EndTransaction RPC (RocketMQ 5's proxy
``EndTransactionActivity``), a 5.x producer's verdict on a half message, from its own
transaction (SOURCE_CLIENT) or from its checker answering a RecoverOrphanedTransactionCommand
(SOURCE_SERVER_CHECK).

The transaction id locates the half (``transaction_id``); the verdict goes to the broker's
``TransactionalMessageService`` as an END_TRANSACTION would, with the topic as producer group
(a gRPC send of a half records the topic as its group, as RocketMQ 5's proxy does). COMMIT
stores the message in its topic, ROLLBACK drops it, UNSPECIFIED leaves the half for the next
check. Answers: OK; INVALID_TRANSACTION_ID for an empty or foreign id; ILLEGAL_TOPIC for no
topic; BAD_REQUEST when the id does not name a half of that topic; INTERNAL_SERVER_ERROR when
the store fails.
"""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.broker.transactional_message_service import TransactionalMessageService
from orbitmq.common import sys_flag as sf
from orbitmq.protocol import ResponseCode
from orbitmq.protocol.header import EndTransactionRequestHeader
from orbitmq.proxy.transaction_id import decode_transaction_id
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as service

log = logging.getLogger(__name__)

#: TransactionResolution -> the sys-flag verdict of END_TRANSACTION.
_VERDICTS: Final = {1: sf.TRANSACTION_COMMIT_TYPE, 2: sf.TRANSACTION_ROLLBACK_TYPE}
_SOURCE_SERVER_CHECK: Final = 2


def _response(code: d.Code, message: str) -> service.EndTransactionResponse:
    return service.EndTransactionResponse(status=d.Status(code=code, message=message))


class EndTransactionActivity:
    """Answers EndTransaction through the broker's transactional message service; no state
    of its own. For the broker's event loop."""

    def __init__(self, service_: TransactionalMessageService) -> None:
        self.service = service_

    async def end_transaction(
        self, request: service.EndTransactionRequest
    ) -> service.EndTransactionResponse:
        topic = str(request.topic.name)
        if not topic:
            return _response(d.ILLEGAL_TOPIC, "topic name cannot be empty")
        transaction_id = str(request.transaction_id)
        if not transaction_id.strip():
            return _response(d.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        located = decode_transaction_id(transaction_id)
        if located is None:
            return _response(
                d.INVALID_TRANSACTION_ID,
                f"transaction id {transaction_id} is not one this broker gave",
            )
        verdict = _VERDICTS.get(int(request.resolution))
        if verdict is None:
            log.info("transaction %s: producer does not know yet", transaction_id)
            return _response(d.OK, "OK")
        commit_log_offset, half_offset = located
        header = EndTransactionRequestHeader(
            producer_group=topic,
            tran_state_table_offset=half_offset,
            commit_log_offset=commit_log_offset,
            commit_or_rollback=verdict,
            from_transaction_check=int(request.source) == _SOURCE_SERVER_CHECK,
            msg_id=str(request.message_id),
            transaction_id=transaction_id,
        )
        code, remark = await self.service.end(header)
        if code == ResponseCode.SUCCESS:
            return _response(d.OK, "OK")
        if remark and remark.startswith("storing"):
            return _response(d.INTERNAL_SERVER_ERROR, remark)
        return _response(d.BAD_REQUEST, f"transaction {transaction_id} of topic {topic}: {remark}")
