"""Running the listener over pulled messages: concurrently in batches (RocketMQ's
``ConsumeMessageConcurrentlyService``) or one queue at a time in offset order
(``ConsumeMessageOrderlyService``). Both commit, per queue, the lowest offset still in flight.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from operator import attrgetter
from typing import Any, Protocol

from orbitmq.client.consume_message_hook import (
    CONSUME_CONTEXT_TYPE,
    ConsumeMessageContext,
    ConsumeReturnType,
)
from orbitmq.client.consumer_config import (
    ConsumeContext,
    ConsumeResult,
    Listener,
    PushConsumerConfig,
)
from orbitmq.client.offset_store import OffsetStore
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.common import Clock, MessageExt, MessageQueue
from orbitmq.common import message_const as mc
from orbitmq.common.message import add_properties
from orbitmq.common.topic import retry_topic
from orbitmq.protocol import MessageModel

log = logging.getLogger(__name__)

_TOPIC = attrgetter("topic")

#: How long a message whose send-back failed waits before it is consumed again locally.
LOCAL_RETRY_DELAY_S = 5.0


class ConsumeServiceHost(Protocol):
    """What a consume service uses of the push consumer it works for (``PushConsumer`` is
    one): its group and configuration, its clock, its offset store, its consume hooks and the
    send back of a failed message."""

    @property
    def group(self) -> str: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def config(self) -> PushConsumerConfig: ...

    @property
    def offset_store(self) -> OffsetStore: ...

    def before_consume(
        self, messages: Sequence[MessageExt], mq: MessageQueue
    ) -> ConsumeMessageContext: ...

    def after_consume(self, context: ConsumeMessageContext, success: bool) -> None: ...

    async def send_message_back(self, msg: MessageExt, delay_level: int) -> bool: ...


class ConsumeService(Protocol):
    """Takes the messages a pull put into a process queue and runs the listener on them."""

    def submit(self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None: ...

    async def shutdown(self) -> None: ...


class _ListenerRunner:
    """Calls the user's listener: ``async def`` listeners on the loop, bounded by a semaphore;
    plain functions on a thread pool of consume_thread_max threads. An exception, or a
    failure answer, is a failure."""

    def __init__(self, listener: Listener, threads: int) -> None:
        self._listener = listener
        self._is_async = inspect.iscoroutinefunction(listener)
        self._pool = None if self._is_async else ThreadPoolExecutor(threads, "orbitmq-consume")
        self._slots = asyncio.Semaphore(threads)

    async def consume(
        self, consumer: ConsumeServiceHost, batch: list[MessageExt], context: ConsumeContext
    ) -> bool:
        """One listener call as the user sees it: original topics restored, consume start
        stamped, the consumer's hooks around it (told how the call ended, as RocketMQ's
        ConsumeContextType). True when every message was consumed."""
        restore_retry_topic(batch, consumer.group)
        began_ms = consumer.clock.now_ms()
        mark_consume_start(batch, began_ms)
        hooks_context = consumer.before_consume(batch, context.message_queue)
        outcome = await self.run(batch, context)
        ok = outcome is ConsumeReturnType.SUCCESS
        if ok and consumer.clock.now_ms() - began_ms >= consumer.config.consume_timeout_s * 1000:
            outcome = ConsumeReturnType.TIME_OUT  # consumed, but too slowly
        hooks_context.props[CONSUME_CONTEXT_TYPE] = outcome.name
        consumer.after_consume(hooks_context, ok)
        return ok

    async def run(
        self, messages: Sequence[MessageExt], context: ConsumeContext
    ) -> ConsumeReturnType:
        """SUCCESS when the listener consumed every message, EXCEPTION when it raised,
        FAILED when it answered a failure."""
        async with self._slots:
            try:
                if self._pool is None:
                    answer = self._listener(messages, context)
                    if inspect.isawaitable(answer):
                        answer = await answer
                else:
                    loop = asyncio.get_running_loop()
                    answer = await loop.run_in_executor(
                        self._pool, self._listener, messages, context
                    )
            except Exception:
                log.warning("consume of %d message(s) failed", len(messages), exc_info=True)
                return ConsumeReturnType.EXCEPTION
        if answer is None or answer is ConsumeResult.SUCCESS:
            return ConsumeReturnType.SUCCESS
        return ConsumeReturnType.FAILED

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def mark_consume_start(messages: Sequence[MessageExt], now_ms: int) -> None:
    """Stamp CONSUME_START_TIME: the consume-timeout cleaner measures from it."""
    add_properties(messages, {mc.PROPERTY_CONSUME_START_TIMESTAMP: str(now_ms)})


def restore_retry_topic(messages: Sequence[MessageExt], group: str) -> None:
    """Messages redelivered from %RETRY%group carry their original topic in RETRY_TOPIC:
    the listener sees the topic they were sent to (RocketMQ's resetRetryAndNamespace)."""
    retry = retry_topic(group)
    # Most batches hold no retry at all: one scan of the topics (in C) says so.
    if retry not in map(_TOPIC, messages):
        return
    for m in messages:
        if m.topic == retry:
            original = m.properties.get(mc.PROPERTY_RETRY_TOPIC)
            if original:
                m.topic = original


class ConcurrentConsumeService:
    """Owns the tasks consuming batches of consume_message_batch_max_size messages, any
    number of queues and batches at once. Failed messages are sent back for retry
    (clustering) and removed from the queue, so the committed offset moves on; if the send
    back fails they are consumed again locally after 5 s. Broadcasting never retries."""

    def __init__(self, consumer: ConsumeServiceHost, listener: Listener) -> None:
        self._consumer = consumer
        self._runner = _ListenerRunner(listener, consumer.config.consume_thread_max)
        self._tasks: set[asyncio.Task[None]] = set()

    def submit(self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        size = max(1, self._consumer.config.consume_message_batch_max_size)
        for start in range(0, len(messages), size):
            self._spawn(self._consume(messages[start : start + size], pq, mq))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _consume(self, batch: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        if pq.dropped:
            return
        consumer = self._consumer
        context = ConsumeContext(mq)
        ok = await self._runner.consume(consumer, batch, context)
        if pq.dropped:
            # The queue moved to another consumer meanwhile: it consumes these again.
            return
        failed = [] if ok else batch[context.ack_index + 1 :]
        retry_locally: list[MessageExt] = []
        if failed and consumer.config.message_model is MessageModel.CLUSTERING:
            for m in failed:
                if not await consumer.send_message_back(m, context.delay_level_when_next_consume):
                    m.reconsume_times += 1
                    m.settle_properties()  # the listener had it; the retry stamps it again
                    retry_locally.append(m)
        elif failed:
            log.warning("broadcasting: %d failed message(s) dropped, as RocketMQ does", len(failed))
        done = [m for m in batch if m not in retry_locally] if retry_locally else batch
        offset = pq.remove_messages(done)
        if offset >= 0 and not pq.dropped:
            consumer.offset_store.update_offset(mq, offset, True)
        if retry_locally:
            self._spawn(self._retry_later(retry_locally, pq, mq))

    async def _retry_later(
        self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue
    ) -> None:
        await asyncio.sleep(LOCAL_RETRY_DELAY_S)
        await self._consume(messages, pq, mq)

    async def shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._runner.shutdown()


class OrderlyConsumeService:
    """Owns one consuming task per queue at most: messages of a queue are given to the
    listener in offset order, one batch at a time, and only while this consumer holds the
    queue's lock at the broker (clustering). A failed batch is retried in place after
    ``suspend_current_queue_time_s``; past max reconsume times it goes to the dead letter
    queue and the queue moves on (R27)."""

    def __init__(self, consumer: ConsumeServiceHost, listener: Listener) -> None:
        self._consumer = consumer
        self._runner = _ListenerRunner(listener, consumer.config.consume_thread_max)
        self._running: dict[MessageQueue, asyncio.Task[None]] = {}

    def submit(self, messages: list[MessageExt], pq: ProcessQueue, mq: MessageQueue) -> None:
        del messages  # already in the process queue, taken in order from there
        task = self._running.get(mq)
        if task is None or task.done():
            self._running[mq] = asyncio.ensure_future(self._drain(pq, mq))

    async def _drain(self, pq: ProcessQueue, mq: MessageQueue) -> None:
        consumer = self._consumer
        clustering = consumer.config.message_model is MessageModel.CLUSTERING
        size = max(1, consumer.config.consume_message_batch_max_size)
        while not pq.dropped:
            if clustering and (not pq.locked or pq.is_lock_expired()):
                # Not ours (yet): the lock renewal submits again once it is.
                return
            batch = pq.take_messages(size)
            if not batch:
                return
            context = ConsumeContext(
                mq, suspend_current_queue_time_s=consumer.config.suspend_current_queue_time_s
            )
            ok = await self._runner.consume(consumer, batch, context)
            if pq.dropped:
                return
            if not ok and await self._should_suspend(batch):
                for m in batch:
                    m.settle_properties()  # the listener had them; the retry stamps them again
                pq.make_message_to_consume_again(batch)
                await asyncio.sleep(context.suspend_current_queue_time_s)
                continue
            offset = pq.commit()
            if offset >= 0:
                consumer.offset_store.update_offset(mq, offset, False)

    async def _should_suspend(self, batch: list[MessageExt]) -> bool:
        """RocketMQ's checkReconsumeTimes: messages past max reconsume times go to the dead
        letter queue; the batch is retried in place if any message is not past it yet or
        could not be sent there."""
        max_times = self._consumer.config.effective_max_reconsume_times
        suspend = False
        for m in batch:
            if m.reconsume_times >= max_times:
                m.properties[mc.PROPERTY_RECONSUME_TIME] = str(m.reconsume_times)
                if not await self._consumer.send_message_back(m, -1):
                    suspend = True
                    m.reconsume_times += 1
            else:
                suspend = True
                m.reconsume_times += 1
        return suspend

    async def shutdown(self) -> None:
        for task in self._running.values():
            task.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)
        self._running.clear()
        self._runner.shutdown()
