"""END_TRANSACTION (37): a producer's (or a checked producer's) verdict on a half message."""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.broker.transactional_message_service import TransactionalMessageService
from orbitmq.common import sys_flag as sf
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import EndTransactionRequestHeader
from orbitmq.protocol.processor_codes import END_TRANSACTION_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import BrokerRole, MessageStore

log = logging.getLogger(__name__)


class EndTransactionProcessor(CodeDispatchingProcessor):
    """Answers END_TRANSACTION through the transactional message service; no state of its
    own. For the broker's event loop."""

    REQUEST_CODES: Final = END_TRANSACTION_CODES

    def __init__(self, store: MessageStore, service: TransactionalMessageService) -> None:
        super().__init__({RequestCode.END_TRANSACTION: self.end_transaction})
        self.store = store
        self.service = service

    async def end_transaction(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = EndTransactionRequestHeader.from_ext_fields(request.ext_fields)
        if self.store.config.broker_role is BrokerRole.SLAVE:
            return RemotingCommand.create_response(request, ResponseCode.SLAVE_NOT_AVAILABLE)
        if header.commit_or_rollback == sf.TRANSACTION_NOT_TYPE:
            # Unknown yet: the half waits for a later verdict; RocketMQ sends no answer.
            log.info("transaction %s: producer does not know yet", header.transaction_id)
            return None
        code, remark = await self.service.end(header)
        return RemotingCommand.create_response(request, code, remark)
