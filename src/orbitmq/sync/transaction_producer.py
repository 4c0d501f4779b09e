"""The blocking ``TransactionProducer``."""

from __future__ import annotations

from typing import Any, cast

from orbitmq.client import ClientConfig, ProducerConfig, TransactionListener, TransactionSendResult
from orbitmq.client import TransactionProducer as AsyncTransactionProducer
from orbitmq.common import Message
from orbitmq.sync.facade import DEFAULT_CALL_TIMEOUT_S, Facade
from orbitmq.sync.producer import Producer


class TransactionProducer(Producer):
    """Blocking ``orbitmq.client.TransactionProducer``: owns that producer (and its client
    instance) and the loop thread it runs on. Safe to share between threads. The listener's
    plain methods run on the producer's check threads, its ``async def`` ones on the loop
    thread (keep those non-blocking)."""

    _thread_name = "orbitmq-sync-transaction-producer"

    def __init__(
        self,
        group: str,
        *,
        transaction_listener: TransactionListener,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: ProducerConfig | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        # Not GroupFacade's constructor: that one builds a plain producer, without a listener.
        Facade.__init__(
            self,
            lambda: AsyncTransactionProducer(
                group,
                transaction_listener=transaction_listener,
                namesrv_addr=namesrv_addr,
                client_config=client_config,
                config=config,
            ),
            thread_name=f"{self._thread_name}-{group}",
            what=f"{self._what} {group}",
            call_timeout_s=call_timeout_s,
        )

    def send_message_in_transaction(self, msg: Message, arg: Any = None) -> TransactionSendResult:
        """``TransactionProducer.send_message_in_transaction``: waited for the send's timeout,
        then the facade's call timeout for the local transaction."""
        client = cast(AsyncTransactionProducer, self._client)
        wait_s = client.config.send_msg_timeout_s + self._call_timeout_s
        return self._call(client.send_message_in_transaction(msg, arg), wait_s)
