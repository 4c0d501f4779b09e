"""The blocking ``QueueReader``."""

from __future__ import annotations

import concurrent.futures
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from typing import TypeVar

from orbitmq.client import ClientConfig, MessageSelector
from orbitmq.client import QueueReader as AsyncQueueReader
from orbitmq.client.blocking_range_reader import BlockingRangeReader
from orbitmq.client.queue_reader import DEFAULT_BATCH_SIZE
from orbitmq.common import SUB_ALL, TOOLS_CONSUMER_GROUP, MessageExt, MessageQueue
from orbitmq.sync.facade import DEFAULT_CALL_TIMEOUT_S, GRACE_S, Facade, blocking

T = TypeVar("T")


class QueueReader(Facade[AsyncQueueReader]):
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
        self._pull_wait_s = pull_timeout_s + GRACE_S
        tls = client_config.tls_config if client_config and client_config.use_tls else None
        self._ranges = BlockingRangeReader(
            consumer_group,
            pull_timeout_s,
            ssl=tls.client_context() if tls else None,
            rpc_hook=client_config.rpc_hook() if client_config else None,
        )

    message_queues = blocking(AsyncQueueReader.message_queues)
    queue_offsets = blocking(AsyncQueueReader.queue_offsets)
    search_offset = blocking(AsyncQueueReader.search_offset)
    commit_offset = blocking(AsyncQueueReader.commit_offset)
    broker_addr = blocking(AsyncQueueReader.broker_addr)

    def read(
        self,
        mq: MessageQueue,
        start_offset: int,
        end_offset: int,
        *,
        subscription: str | MessageSelector = SUB_ALL,
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
    ) -> Generator[memoryview, None, None]:
        """The pulls of ``read`` undecoded, for a caller that decodes the stored records
        itself: each answer's records as a view, valid until the next one is asked for
        (copy what must outlive it). Read over a blocking socket of the calling thread's
        own, one pull ahead. The broker matched tag hash codes only and may send records at
        or past ``end_offset`` when it filters: the caller keeps what is below
        ``end_offset`` and re-checks the tag strings."""
        addr = self.broker_addr(mq)
        yield from self._ranges.read_raw(
            addr, mq, start_offset, end_offset, subscription=subscription, batch_size=batch_size
        )

    def shutdown(self) -> None:
        self._ranges.close()
        super().shutdown()

    def close(self) -> None:
        """The same as ``shutdown`` (as ``QueueReader.close`` is)."""
        self.shutdown()

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


async def _next_item(items: AsyncIterator[T]) -> T | None:
    # On the loop: one step of an async generator, None at its end (StopAsyncIteration
    # cannot cross concurrent.futures as a value).
    try:
        return await anext(items)
    except StopAsyncIteration:
        return None
