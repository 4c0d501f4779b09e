"""Stateless reads of a queue's offset range: the building block of the Spark source.

``read_queue_range`` reads messages ``[start_offset, end_offset)`` of one queue, as batches,
with no consumer group membership, no heartbeat and no offset store: everything it needs is
in its arguments, so it can run in any process (a Spark executor) and be retried at will.
``queue_offsets`` gives the (min, max) of every queue of a topic, for planning the ranges.

::

    bounds = await queue_offsets("127.0.0.1:9876", "TopicTest")
    async for batch in read_queue_range("127.0.0.1:9876", "TopicTest", "broker-a", 0, 10, 20):
        ...

A worker that reads many ranges keeps one :class:`QueueReader` and passes it as ``client=``
so connections and routes are reused across calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Final

from orbitmq.client.errors import MQClientError
from orbitmq.client.message_selector import MessageSelector, selector_of
from orbitmq.client.mq_client_instance import (
    ClientConfig,
    MQClientInstance,
    client_config_for,
    subscribe_queues_of,
)
from orbitmq.client.pull_result import PullResult, PullStatus
from orbitmq.common import SUB_ALL, TOOLS_CONSUMER_GROUP, MessageExt, MessageQueue
from orbitmq.filter import SubscriptionData
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION

#: One pull's batch: the broker's default maxTransferCountOnMessageInMemory.
DEFAULT_BATCH_SIZE: Final = 32


class OffsetOutOfRangeError(MQClientError):
    """A range asks for offsets the queue does not hold: below its min offset (retention
    deleted them) or at or past its max offset (not written yet). Names the queue, the
    requested offset and the queue's bounds, so a caller can decide to fail or to skip
    (the Spark source's failOnDataLoss)."""

    def __init__(
        self, mq: MessageQueue, requested_offset: int, min_offset: int, max_offset: int
    ) -> None:
        where = "below the min offset" if requested_offset < min_offset else "at or past the end"
        super().__init__(
            f"offset {requested_offset} of topic {mq.topic} queue {mq.broker_name}:{mq.queue_id}"
            f" is out of range ({where}): the queue holds offsets [{min_offset}, {max_offset})"
        )
        self.message_queue = mq
        self.requested_offset = requested_offset
        self.min_offset = min_offset
        self.max_offset = max_offset


class QueueReader:
    """Owns one MQClientInstance (its connections and route cache), never started: no
    heartbeat, no route refresh loop, no consumer registered. Reads are plain pulls without
    long polling. Use from one event loop; several reads may run at once on it."""

    def __init__(
        self,
        namesrv_addr: str | None = None,
        *,
        client_config: ClientConfig | None = None,
        consumer_group: str = TOOLS_CONSUMER_GROUP,
        pull_timeout_s: float = 10.0,
    ) -> None:
        self.instance = MQClientInstance(client_config_for(namesrv_addr, client_config))
        self.consumer_group = consumer_group
        self.pull_timeout_s = pull_timeout_s

    async def __aenter__(self) -> QueueReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Nothing to start (connections open on first use); here so the blocking facade
        treats a reader like every other client."""

    async def shutdown(self) -> None:
        await self.close()

    async def close(self) -> None:
        await self.instance.shutdown()

    async def message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic``, from a fresh route."""
        route = await self.instance.update_topic_route(topic)
        return sorted(subscribe_queues_of(topic, route))

    async def queue_offsets(self, topic: str) -> dict[MessageQueue, tuple[int, int]]:
        """(min offset, max offset) of every readable queue of ``topic``; max is one past
        the last message."""
        queues = await self.message_queues(topic)
        bounds = await asyncio.gather(*(self._bounds(mq) for mq in queues))
        return dict(zip(queues, bounds, strict=True))

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of ``mq`` stored at or after ``timestamp_ms`` (the queue's max
        offset when every message is older)."""
        return await self.instance.search_offset(mq, timestamp_ms)

    async def commit_offset(self, group: str, mq: MessageQueue, offset: int) -> None:
        """Record ``offset`` as ``group``'s consumed offset of ``mq`` at the broker, so that
        admin tools show the group's progress and lag (the group needs no live consumer)."""
        instance = self.instance
        addr = await instance.find_broker_addr_or_fetch(mq.broker_name, mq.topic)
        timeout = instance.config.mq_client_api_timeout_s
        await instance.api.update_consumer_offset(addr, group, mq, offset, timeout)

    async def _bounds(self, mq: MessageQueue) -> tuple[int, int]:
        return await self.instance.min_offset(mq), await self.instance.max_offset(mq)

    async def read(
        self,
        mq: MessageQueue,
        start_offset: int,
        end_offset: int,
        *,
        subscription: str | MessageSelector = SUB_ALL,
        batch_size: int = DEFAULT_BATCH_SIZE,
    ) -> AsyncGenerator[list[MessageExt], None]:
        """Messages of ``mq`` with offsets in ``[start_offset, end_offset)`` whose tag matches
        ``subscription`` (or that a selector such as ``sql("a > 5")`` takes), as non-empty
        batches in offset order. Raises
        :class:`OffsetOutOfRangeError` when the queue no longer (or does not yet) hold an
        offset the range needs."""
        async for result, offset in self._pulls(
            mq, start_offset, end_offset, subscription, batch_size
        ):
            # FOUND (possibly emptied by the client's tag re-check) or NO_MATCHED_MSG: the
            # filter skipped what lies before next_begin_offset.
            batch = [m for m in result.messages if offset <= m.queue_offset < end_offset]
            if batch:
                yield batch

    async def broker_addr(self, mq: MessageQueue) -> str:
        """The address of ``mq``'s broker (the master), from the route cache or a fetch."""
        return await self.instance.find_broker_addr_or_fetch(mq.broker_name, mq.topic)

    async def _pulls(
        self,
        mq: MessageQueue,
        start_offset: int,
        end_offset: int,
        subscription: str | MessageSelector,
        batch_size: int,
    ) -> AsyncGenerator[tuple[PullResult, int], None]:
        """Pull after pull over the range: each answer with the offset it was pulled at."""
        check_range(start_offset, end_offset, batch_size)
        sub = selector_of(subscription).subscription(mq.topic, int(time.time() * 1000))
        offset = start_offset
        while offset < end_offset:
            header = range_pull_header(
                self.consumer_group, mq, sub, offset, min(batch_size, end_offset - offset)
            )
            addr = await self.broker_addr(mq)
            result = await self.instance.api.pull_message(
                addr, header, sub, self.pull_timeout_s, annotate=False
            )
            check_progress(mq, offset, result)
            yield result, offset
            offset = result.next_begin_offset


def range_pull_header(
    consumer_group: str, mq: MessageQueue, sub: SubscriptionData, offset: int, max_nums: int
) -> PullMessageRequestHeader:
    """A range read's pull: the subscription travels with it, nothing is committed and the
    broker does not hold it (no long polling)."""
    return PullMessageRequestHeader(
        consumer_group=consumer_group,
        topic=mq.topic,
        queue_id=mq.queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=FLAG_SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=sub.sub_string,
        sub_version=sub.sub_version,
        expression_type=sub.expression_type,
    )


def check_progress(mq: MessageQueue, offset: int, result: PullResult) -> None:
    """That a range read's pull at ``offset`` moved on: OffsetOutOfRangeError when the queue
    does not hold the offset, MQClientError when the answer does not advance."""
    status = result.pull_status
    if status is PullStatus.OFFSET_ILLEGAL or status is PullStatus.NO_NEW_MSG:
        # NO_NEW_MSG before the end: the range reaches past what is written.
        raise OffsetOutOfRangeError(mq, offset, result.min_offset, result.max_offset)
    if result.next_begin_offset <= offset:
        raise MQClientError(
            f"{mq}: pull at offset {offset} did not advance"
            f" (next begin offset {result.next_begin_offset})"
        )


def check_range(start_offset: int, end_offset: int, batch_size: int) -> None:
    if start_offset < 0:
        raise MQClientError(f"start_offset {start_offset} must be >= 0")
    if end_offset < start_offset:
        raise MQClientError(f"end_offset {end_offset} must be >= start_offset {start_offset}")
    if batch_size < 1:
        raise MQClientError(f"batch_size {batch_size} must be >= 1")


async def read_queue_range(
    namesrv_addr: str,
    topic: str,
    broker_name: str,
    queue_id: int,
    start_offset: int,
    end_offset: int,
    *,
    subscription: str | MessageSelector = SUB_ALL,
    batch_size: int = DEFAULT_BATCH_SIZE,
    client: QueueReader | None = None,
) -> AsyncIterator[list[MessageExt]]:
    """Queue ``queue_id`` of ``topic`` on ``broker_name``, offsets ``[start_offset,
    end_offset)``, as batches (see :meth:`QueueReader.read`). Without ``client`` a reader is
    made for this call and closed after it; pass one to reuse its connections."""
    mq = MessageQueue(topic, broker_name, queue_id)
    reader = client or QueueReader(namesrv_addr)
    try:
        async for batch in reader.read(
            mq, start_offset, end_offset, subscription=subscription, batch_size=batch_size
        ):
            yield batch
    finally:
        if client is None:
            await reader.close()


async def queue_offsets(
    namesrv_addr: str, topic: str, *, client: QueueReader | None = None
) -> dict[MessageQueue, tuple[int, int]]:
    """(min offset, max offset) of every readable queue of ``topic``."""
    if client is not None:
        return await client.queue_offsets(topic)
    async with QueueReader(namesrv_addr) as reader:
        return await reader.queue_offsets(topic)
