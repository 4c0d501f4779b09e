"""Blocking facades over the asyncio clients, for code that runs on plain threads (scripts,
WSGI apps, Spark executors): ``orbitmq.sync.Producer``, ``PushConsumer``,
``LitePullConsumer`` and ``AdminClient`` have the names and methods of ``orbitmq.client``'s,
without ``await``::

    from orbitmq import Message
    from orbitmq.sync import Producer

    with Producer("group", namesrv_addr="127.0.0.1:9876") as producer:
        result = producer.send(Message("TopicTest", b"hello"))

The asyncio client does the work; a facade only carries each call to its event loop
(``asyncio.run_coroutine_threadsafe``) and waits, bounded, for the answer. Exceptions arrive
as the client raised them (``MQClientError``, ``MQBrokerError``, ``RemotingError``,
``TimeoutError``), so code may move between the two styles without changing its ``except``.

**One event-loop thread per facade object**, not one shared by the process, because:

- shutdown is deterministic: ``shutdown()`` stops the client, stops its loop, cancels what is
  left on it and joins its thread before returning; nothing of the facade outlives it, and a
  process-wide loop would have no owner to decide when it may stop;
- a blocking send hook or ``send_async`` callback stalls only its own client, not every
  client of the process;
- no module-level singleton (DESIGN.md: seams are injected, no globals), so tests and users
  can create and discard facades freely.

The cost is one thread and one loop per client object; processes typically hold a few. The
thread is a daemon: a forgotten ``shutdown`` does not hang interpreter exit (the client then
simply stops, as after ``kill``; its offsets are committed up to the last periodic persist).
A facade is single-use: once shut down it cannot start again; create a new one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Sequence,
)
from types import TracebackType
from typing import Any, Final, Generic, Protocol, Self, TypeVar

from orbitmq.client import (
    AdminClient as AsyncAdminClient,
)
from orbitmq.client import (
    ClientConfig,
    ConsumeContext,
    ConsumeMessageHook,
    ConsumeResult,
    ConsumerProgress,
    LitePullConsumerConfig,
    MessageQueueSelector,
    MQClientError,
    ProducerConfig,
    PushConsumerConfig,
    QueueStatus,
    SendMessageHook,
    SendResult,
)
from orbitmq.client import (
    LitePullConsumer as AsyncLitePullConsumer,
)
from orbitmq.client import (
    Producer as AsyncProducer,
)
from orbitmq.client import (
    PushConsumer as AsyncPushConsumer,
)
from orbitmq.client import (
    QueueReader as AsyncQueueReader,
)
from orbitmq.client.admin_client import DEFAULT_PERM, DEFAULT_QUEUE_NUMS
from orbitmq.client.blocking_range_reader import BlockingRangeReader
from orbitmq.client.queue_reader import DEFAULT_BATCH_SIZE, TOOLS_CONSUMER_GROUP
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.filter import SUB_ALL
from orbitmq.protocol import ClusterInfo, TopicRouteData
from orbitmq.protocol.header import EndTransactionRequestHeader
from orbitmq.remoting.event_loop import new_event_loop

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "AdminClient",
    "LitePullConsumer",
    "LoopThread",
    "Producer",
    "PushConsumer",
    "QueueReader",
    "SendCallback",
    "SyncListener",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class _AsyncClient(Protocol):
    """What every wrapped asyncio client has: a lifetime."""

    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...


C = TypeVar("C", bound=_AsyncClient)

#: How long a facade waits for calls that carry no timeout of their own (start, shutdown,
#: admin operations). Each network request inside is bounded by the client's own timeouts;
#: this bound only keeps a caller from waiting for ever on a wedged loop.
DEFAULT_CALL_TIMEOUT_S: Final = 30.0
#: Added to a send's (or poll's) own timeout when waiting for it: the call ends on the loop
#: first, and its answer still has to cross to the waiting thread.
_GRACE_S: Final = 1.0
#: How long shutdown lets cancelled tasks finish, and waits for the loop thread to end.
_DRAIN_S: Final = 5.0

#: ``send_async``'s callback: ``(result, None)`` on success, ``(None, error)`` on failure.
SendCallback = Callable[[SendResult | None, BaseException | None], None]
#: A sync PushConsumer's listener: a plain function, run on the consumer's thread pool.
#: Returning None (or ConsumeResult.SUCCESS) means consumed; raising means retry later.
SyncListener = Callable[[Sequence[MessageExt], ConsumeContext], ConsumeResult | None]


class LoopThread:
    """Owns one event loop (uvloop when installed) and the daemon thread that runs it.
    ``submit`` and ``call`` are safe from any thread; ``close`` is idempotent."""

    def __init__(self, name: str, what: str) -> None:
        self._what = what
        self._loop = new_event_loop()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            self._drain()

    def _drain(self) -> None:
        """After the loop stopped: cancel what is left, so every pending future (a
        ``send_async`` in flight) completes, cancelled, instead of hanging; then close."""
        loop = self._loop
        try:
            pending = asyncio.all_tasks(loop)
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.wait(pending, timeout=_DRAIN_S))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(
                asyncio.wait_for(loop.shutdown_default_executor(), timeout=_DRAIN_S)
            )
        except Exception:
            log.exception("draining the loop of %s failed", self._what)
        finally:
            loop.close()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Schedule ``coro`` on the loop. Under the lock so that nothing is scheduled on a
        loop that ``close`` is stopping (it would never run, and its future never end)."""
        with self._lock:
            if self._closed:
                coro.close()  # never awaited, by design: no warning
                raise MQClientError(f"{self._what} is shut down: create a new one")
            return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        """Run ``coro`` on the loop and wait at most ``timeout_s`` for its result."""
        if threading.current_thread() is self._thread:
            # Waiting here for the loop we are running on could never end.
            coro.close()
            raise MQClientError(
                f"a blocking call to {self._what} from its own loop thread (a send hook or "
                "send_async callback) would deadlock: use the asyncio client there"
            )
        future = self.submit(coro)
        try:
            return future.result(timeout_s)
        except BaseException:
            # Timed out or interrupted (KeyboardInterrupt): stop the work we no longer await.
            future.cancel()
            raise

    def close(self) -> None:
        """Stop the loop, let it drain, and join its thread (bounded)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._loop.call_soon_threadsafe(self._loop.stop)
        if threading.current_thread() is self._thread:
            return  # closing from a callback: the thread ends when the callback returns
        self._thread.join(2 * _DRAIN_S)
        if self._thread.is_alive():
            log.warning("the loop thread of %s did not end in %.0f s", self._what, 2 * _DRAIN_S)


async def _construct(factory: Callable[[], T]) -> T:
    # On the loop: a client may bind asyncio primitives to the running loop when built.
    return factory()


async def _apply(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    # On the loop: configuration calls mutate state its tasks iterate (subscriptions that
    # heartbeats read, the hook lists that sends walk), so they must not race them.
    return function(*args, **kwargs)


class _Facade(Generic[C]):
    """Owns one asyncio client and the loop thread it runs on; the lifetime shared by the
    facades. Safe from several threads."""

    def __init__(
        self, factory: Callable[[], C], *, thread_name: str, what: str, call_timeout_s: float
    ) -> None:
        self._call_timeout_s = call_timeout_s
        self._shutdown_lock = threading.Lock()
        self._runner = LoopThread(thread_name, what)
        try:
            self._client: C = self._runner.call(_construct(factory), call_timeout_s)
        except BaseException:
            self._runner.close()  # a bad argument leaves no thread behind
            raise

    def _call(self, coro: Coroutine[Any, Any, T], timeout_s: float | None = None) -> T:
        return self._runner.call(coro, self._call_timeout_s if timeout_s is None else timeout_s)

    def _apply(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return self._call(_apply(function, *args, **kwargs))

    def start(self) -> None:
        self._call(self._client.start())

    def shutdown(self) -> None:
        """Shut the client down, then stop its loop and join its thread. Idempotent; from
        several threads at once, the others wait for the first."""
        with self._shutdown_lock:
            if self._runner.closed:
                return
            try:
                self._call(self._client.shutdown())
            finally:
                self._runner.close()

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            # ``with`` does not call __exit__ when __enter__ raises: do not leak the thread.
            self.shutdown()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.shutdown()


class Producer(_Facade[AsyncProducer]):
    """Blocking ``orbitmq.client.Producer``: owns that producer (and its client instance)
    and the loop thread it runs on. Safe to share between threads: their sends run
    concurrently on the loop. Send hooks and ``send_async`` callbacks run on the loop thread:
    keep them short and non-blocking."""

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: ProducerConfig | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        super().__init__(
            lambda: AsyncProducer(
                group, namesrv_addr=namesrv_addr, client_config=client_config, config=config
            ),
            thread_name=f"orbitmq-sync-producer-{group}",
            what=f"producer {group}",
            call_timeout_s=call_timeout_s,
        )

    @property
    def group(self) -> str:
        return self._client.group

    @property
    def config(self) -> ProducerConfig:
        return self._client.config

    def register_send_hook(self, hook: SendMessageHook) -> None:
        self._apply(self._client.register_send_hook, hook)

    def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._call(self._client.fetch_publish_message_queues(topic))

    def end_transactions(
        self,
        sequences: Sequence[Sequence[tuple[str, str, EndTransactionRequestHeader]]],
        timeout_s: float,
    ) -> None:
        """``Producer.end_transactions``, waited for at most ``timeout_s``."""
        self._call(self._client.end_transactions(sequences), timeout_s)

    def send_half_async(
        self, msg: Message | Sequence[Message], queue: MessageQueue
    ) -> concurrent.futures.Future[SendResult]:
        """Start ``Producer.send_half`` (a batch is staged whole) and return at once; its
        outcome arrives through the returned future."""
        return self._submit(self._client.send_half(msg, queue))

    def _send_wait_s(self, timeout_s: float | None) -> float:
        own = self._client.config.send_msg_timeout_s if timeout_s is None else timeout_s
        return own + _GRACE_S

    def send(
        self,
        msg: Message | Sequence[Message],
        *,
        timeout_s: float | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
    ) -> SendResult:
        """``Producer.send``, waited for: one message or a batch; ``selector`` and ``arg``
        (or ``queue``) for ordered sends."""
        coro = self._client.send(msg, timeout_s=timeout_s, selector=selector, arg=arg, queue=queue)
        return self._call(coro, self._send_wait_s(timeout_s))

    def send_oneway(self, msg: Message | Sequence[Message]) -> None:
        """``Producer.send_oneway``: returns once the request is written."""
        self._call(self._client.send_oneway(msg), self._send_wait_s(None))

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


class PushConsumer(_Facade[AsyncPushConsumer]):
    """Blocking ``orbitmq.client.PushConsumer``: owns that consumer (subscriptions, queues,
    pull loops, offsets) and the loop thread its pulls run on. The listener is a plain
    function and runs on the consumer's thread pool (consume_thread_max threads), never on
    the loop. Its methods are safe from any thread."""

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: PushConsumerConfig | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        super().__init__(
            lambda: AsyncPushConsumer(
                group, namesrv_addr=namesrv_addr, client_config=client_config, config=config
            ),
            thread_name=f"orbitmq-sync-consumer-{group}",
            what=f"push consumer {group}",
            call_timeout_s=call_timeout_s,
        )

    @property
    def group(self) -> str:
        return self._client.group

    @property
    def config(self) -> PushConsumerConfig:
        return self._client.config

    def subscribe(self, topic: str, expression: str = "*") -> None:
        """Consume ``topic``'s messages whose tag matches ``expression`` ("TagA || TagB")."""
        self._apply(self._client.subscribe, topic, expression)

    def unsubscribe(self, topic: str) -> None:
        self._apply(self._client.unsubscribe, topic)

    def register_listener(self, listener: SyncListener, *, orderly: bool = False) -> None:
        """``listener(messages, context)``, a plain function: returning means consumed,
        raising means retry later. ``orderly`` gives each queue's messages one at a time."""
        if inspect.iscoroutinefunction(listener):
            # It would run on this facade's private loop, which blocking code cannot reach.
            raise MQClientError(
                f"listener {listener!r}: the blocking PushConsumer takes a plain function; "
                "use orbitmq.client.PushConsumer for async def listeners"
            )
        self._apply(self._client.register_listener, listener, orderly=orderly)

    def register_consume_hook(self, hook: ConsumeMessageHook) -> None:
        self._apply(self._client.register_consume_hook, hook)


class LitePullConsumer(_Facade[AsyncLitePullConsumer]):
    """Blocking ``orbitmq.client.LitePullConsumer``: owns that consumer (assigned queues, pull
    tasks, the buffer of pulled batches, offsets) and the loop thread its pulls run on.
    Methods are safe from any thread; ``poll`` from one thread at a time, as in RocketMQ."""

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: LitePullConsumerConfig | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        super().__init__(
            lambda: AsyncLitePullConsumer(
                group, namesrv_addr=namesrv_addr, client_config=client_config, config=config
            ),
            thread_name=f"orbitmq-sync-lite-pull-{group}",
            what=f"lite pull consumer {group}",
            call_timeout_s=call_timeout_s,
        )

    @property
    def group(self) -> str:
        return self._client.group

    @property
    def config(self) -> LitePullConsumerConfig:
        return self._client.config

    def subscribe(self, topic: str, expression: str = "*") -> None:
        self._apply(self._client.subscribe, topic, expression)

    def unsubscribe(self, topic: str) -> None:
        self._apply(self._client.unsubscribe, topic)

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        self._apply(self._client.assign, list(queues))

    def assignment(self) -> set[MessageQueue]:
        return self._apply(self._client.assignment)

    def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        return self._call(self._client.fetch_message_queues(topic))

    def poll(self, timeout_s: float | None = None) -> list[MessageExt]:
        """The next pulled batch, or [] after ``timeout_s`` (default poll_timeout_s)."""
        own = self._client.config.poll_timeout_s if timeout_s is None else timeout_s
        return self._call(self._client.poll(timeout_s), max(own, 0.0) + _GRACE_S)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        self._apply(self._client.pause, list(queues))

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self._apply(self._client.resume, list(queues))

    def commit_sync(self) -> None:
        self._call(self._client.commit_sync())

    def committed(self, mq: MessageQueue) -> int:
        return self._call(self._client.committed(mq))

    def seek(self, mq: MessageQueue, offset: int) -> None:
        self._call(self._client.seek(mq, offset))

    def seek_to_begin(self, mq: MessageQueue) -> None:
        self._call(self._client.seek_to_begin(mq))

    def seek_to_end(self, mq: MessageQueue) -> None:
        self._call(self._client.seek_to_end(mq))

    def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self._call(self._client.offset_for_timestamp(mq, timestamp_ms))


class AdminClient(_Facade[AsyncAdminClient]):
    """Blocking ``orbitmq.client.AdminClient``: owns that admin client (connections, route
    cache) and its loop thread. Safe from several threads; calls run concurrently."""

    def __init__(
        self,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        super().__init__(
            lambda: AsyncAdminClient(namesrv_addr=namesrv_addr, client_config=client_config),
            thread_name="orbitmq-sync-admin",
            what="admin client",
            call_timeout_s=call_timeout_s,
        )

    def cluster_info(self) -> ClusterInfo:
        return self._call(self._client.cluster_info())

    def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        return self._call(self._client.master_addrs(cluster))

    def topic_route(self, topic: str) -> TopicRouteData:
        return self._call(self._client.topic_route(topic))

    def list_topics(self) -> list[str]:
        return self._call(self._client.list_topics())

    def create_topic(
        self,
        topic: str,
        *,
        queue_nums: int = DEFAULT_QUEUE_NUMS,
        perm: int = DEFAULT_PERM,
        order: bool = False,
        cluster: str | None = None,
    ) -> dict[str, str]:
        return self._call(
            self._client.create_topic(
                topic, queue_nums=queue_nums, perm=perm, order=order, cluster=cluster
            )
        )

    def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        self._call(self._client.delete_topic(topic, cluster))

    def topic_status(self, topic: str) -> list[QueueStatus]:
        return self._call(self._client.topic_status(topic))

    def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        return self._call(self._client.consumer_progress(group, topic))

    def consumer_ids(self, group: str, topic: str) -> list[str]:
        return self._call(self._client.consumer_ids(group, topic))

    def reset_offset_by_timestamp(
        self, group: str, topic: str, timestamp_ms: int
    ) -> dict[MessageQueue, int]:
        return self._call(self._client.reset_offset_by_timestamp(group, topic, timestamp_ms))

    def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return self._call(self._client.view_message(msg_id, topic))

    def query_messages_by_key(
        self,
        topic: str,
        key: str,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int | None = None,
    ) -> list[MessageExt]:
        return self._call(self._client.query_messages_by_key(topic, key, max_num, begin_ms, end_ms))

    def query_message_by_unique_id(self, topic: str, uniq_id: str) -> MessageExt:
        return self._call(self._client.query_message_by_unique_id(topic, uniq_id))


async def _next_item(items: AsyncIterator[T]) -> T | None:
    # On the loop: one step of an async generator, None at its end (StopAsyncIteration
    # cannot cross concurrent.futures as a value).
    try:
        return await anext(items)
    except StopAsyncIteration:
        return None


class QueueReader(_Facade[AsyncQueueReader]):
    """Blocking ``orbitmq.client.QueueReader``: stateless reads of queue offset ranges, for
    Spark executors and scripts. Owns that reader (connections, route cache) and its loop
    thread. Safe from several threads; each ``read`` iterator belongs to one thread."""

    def __init__(
        self,
        namesrv_addr: str | None = None,
        *,
        client_config: ClientConfig | None = None,
        consumer_group: str = TOOLS_CONSUMER_GROUP,
        pull_timeout_s: float = 10.0,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
    ) -> None:
        super().__init__(
            lambda: AsyncQueueReader(
                namesrv_addr,
                client_config=client_config,
                consumer_group=consumer_group,
                pull_timeout_s=pull_timeout_s,
            ),
            thread_name="orbitmq-sync-reader",
            what="queue reader",
            call_timeout_s=call_timeout_s,
        )
        self._pull_wait_s = pull_timeout_s + _GRACE_S
        self._ranges = BlockingRangeReader(consumer_group, pull_timeout_s)

    def message_queues(self, topic: str) -> list[MessageQueue]:
        return self._call(self._client.message_queues(topic))

    def queue_offsets(self, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        return self._call(self._client.queue_offsets(topic))

    def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        return self._call(self._client.search_offset(mq, timestamp_ms))

    def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        self._call(self._client.commit_offset(group, mq, offset))

    def read(
        self,
        mq: MessageQueue,
        start_offset: int,
        end_offset: int,
        *,
        subscription: str = SUB_ALL,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> Iterator[list[MessageExt]]:
        """The batches of ``QueueReader.read``. The next pull is already on its way while the
        caller works on a batch, so network and caller overlap."""
        return self._iterate(
            self._client.read(
                mq, start_offset, end_offset, subscription=subscription, batch_size=batch_size
            )
        )

    def read_raw(
        self,
        mq: MessageQueue,
        start_offset: int,
        end_offset: int,
        *,
        subscription: str = SUB_ALL,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> Iterator[memoryview]:
        """The pulls of ``read`` undecoded, for a caller that decodes the stored records
        itself: each answer's records as a view, valid until the next one is asked for
        (copy what must outlive it). Read over a blocking socket of the calling thread's
        own, one pull ahead. The broker matched tag hash codes only and may send records at
        or past ``end_offset`` when it filters: the caller keeps what is below
        ``end_offset`` and re-checks the tag strings."""
        addr = self._call(self._client.broker_addr(mq))
        yield from self._ranges.read_raw(
            addr, mq, start_offset, end_offset, subscription=subscription, batch_size=batch_size
        )

    def shutdown(self) -> None:
        self._ranges.close()
        super().shutdown()

    def _iterate(self, items: AsyncGenerator[T, None]) -> Iterator[T]:
        ahead = self._runner.submit(_next_item(items))
        try:
            while True:
                item = ahead.result(self._pull_wait_s)
                if item is None:
                    return
                ahead = self._runner.submit(_next_item(items))
                yield item
        finally:
            # Left early (or failed): let the pull in flight end, bounded by its own timeout,
            # before closing the generator it is running in.
            concurrent.futures.wait([ahead], self._pull_wait_s)
            self._call(items.aclose())
