"""End-transaction hooks (RocketMQ's EndTransactionHook): called after a transaction
producer sends a verdict on a half message, whether after its local transaction or in answer
to the broker's check."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from orbitmq.client.transaction_verdict import LocalTransactionState
from orbitmq.common import Message


@dataclass(frozen=True, slots=True)
class EndTransactionContext:
    """What end-transaction hooks see (RocketMQ's EndTransactionContext). Immutable."""

    producer_group: str
    broker_addr: str
    message: Message
    #: The half's unique id.
    msg_id: str
    transaction_id: str | None
    transaction_state: LocalTransactionState
    from_transaction_check: bool


class EndTransactionHook(Protocol):
    """Called once per verdict sent, on the producer's event loop: keep it quick."""

    def end_transaction(self, context: EndTransactionContext) -> None: ...
