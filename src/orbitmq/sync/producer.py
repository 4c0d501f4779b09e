"""The blocking ``Producer``."""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from orbitmq.client import (
    MessageQueueSelector,
    MQClientError,
    ProducerConfig,
    SendResult,
    TransactionVerdict,
)
from orbitmq.client import Producer as AsyncProducer
from orbitmq.common import Message, MessageQueue
from orbitmq.sync.facade import GRACE_S, GroupFacade, applied, blocking

log = logging.getLogger(__name__)

#: ``send_async``'s callback: ``(result, None)`` on success, ``(None, error)`` on failure.
SendCallback = Callable[[SendResult | None, BaseException | None], None]


def _send_wait_s(producer: Producer, timeout_s: float | None) -> float:
    """How long to wait for a send: its own timeout (default send_msg_timeout_s), and then
    the time its answer takes to cross from the loop."""
    own = producer.config.send_msg_timeout_s if timeout_s is None else timeout_s
    return own + GRACE_S


class Producer(GroupFacade[AsyncProducer, ProducerConfig]):
    """Blocking ``orbitmq.client.Producer``: owns that producer (and its client instance)
    and the loop thread it runs on. Safe to share between threads: their sends run
    concurrently on the loop. Send hooks and ``send_async`` callbacks run on the loop thread:
    keep them short and non-blocking."""

    _client_type = AsyncProducer
    _thread_name = "orbitmq-sync-producer"
    _what = "producer"

    register_send_hook = applied(AsyncProducer.register_send_hook)
    register_end_transaction_hook = applied(AsyncProducer.register_end_transaction_hook)
    fetch_publish_message_queues = blocking(AsyncProducer.fetch_publish_message_queues)
    send = blocking(AsyncProducer.send, wait_s=_send_wait_s)
    send_oneway = blocking(AsyncProducer.send_oneway, wait_s=_send_wait_s)
    send_half = blocking(AsyncProducer.send_half, wait_s=_send_wait_s)
    recall_message = blocking(AsyncProducer.recall_message, wait_s=_send_wait_s)

    def end_transactions(
        self,
        sequences: Sequence[Sequence[TransactionVerdict]],
        *,
        timeout_s: float | None = None,
    ) -> None:
        """``Producer.end_transactions``, waited for at most ``timeout_s`` (default: the
        facade's call timeout)."""
        self._call(self._client.end_transactions(sequences), timeout_s)

    def send_half_async(
        self,
        msg: Message | Sequence[Message],
        queue: MessageQueue,
        *,
        properties: Mapping[str, str] | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Start ``Producer.send_half`` (a batch is staged whole) and return at once; its
        outcome arrives through the returned future."""
        return self._submit(self._client.send_half(msg, queue, properties=properties))

    def send_async(
        self,
        msg: Message | Sequence[Message],
        callback: SendCallback | None = None,
        *,
        timeout_s: float | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> concurrent.futures.Future[SendResult]:
        """Start a send and return at once (RocketMQ's ``send(msg, SendCallback)``). Every
        outcome, a refusal after shutdown included, arrives through the returned future and,
        if given, ``callback(result, error)``. Sends still in flight at shutdown end
        cancelled (``concurrent.futures.CancelledError``)."""
        coro = self._client.send(
            msg,
            timeout_s=timeout_s,
            selector=selector,
            arg=arg,
            queue=queue,
            retry_times=self._client.config.retry_times_when_send_async_failed,
        )
        future = self._submit(coro)
        if callback is not None:
            future.add_done_callback(lambda done: _call_back(callback, done))
        return future

    def _submit(
        self, coro: Coroutine[Any, Any, SendResult]
    ) -> concurrent.futures.Future[SendResult]:
        """The send's future; a refusal (after shutdown) arrives through it too."""
        try:
            return self._runner.submit(coro)
        except MQClientError as exc:
            future: concurrent.futures.Future[SendResult] = concurrent.futures.Future()
            future.set_exception(exc)
            return future


def _call_back(callback: SendCallback, future: concurrent.futures.Future[SendResult]) -> None:
    try:
        if future.cancelled():
            callback(None, concurrent.futures.CancelledError())
        elif (error := future.exception()) is not None:
            callback(None, error)
        else:
            callback(future.result(), None)
    except Exception:
        # The future's own machinery would only log "exception calling callback"; ours
        # names the send's callback, and the send's outcome is still in the future.
        log.exception("a send_async callback raised")
