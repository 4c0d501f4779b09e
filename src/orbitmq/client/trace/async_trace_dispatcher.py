"""``AsyncTraceDispatcher``: trace records batched into trace messages and sent in the
background (RocketMQ's AsyncTraceDispatcher), so that tracing never slows or fails the send
or the consume it records.

A hook's ``append`` only puts the record in a bounded queue (RocketMQ's 1024 places); when
the queue is full the record is dropped and counted, never waited for. A task sends what is
queued as soon as a batch is full (100 records), and a partial batch once its oldest record
has waited half a second (RocketMQ's
waitTimeThresholdMil), each trace message holding at most 100 records and about 118 KB of
text (RocketMQ's 128000-byte trace messages less 10000), keyed by every record's msgId and
keys so that a query by message id finds it. A failed trace send is logged and counted, and
the records it held are lost, as in RocketMQ.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections import deque
from typing import Final, Protocol

from orbitmq.client.trace.trace_data_encoder import (
    DEFAULT_TRACE_TOPIC,
    GROUP_NAME_PREFIX,
    TraceContext,
    encode_trace_context,
)
from orbitmq.common import Message

log = logging.getLogger(__name__)

#: RocketMQ's traceContextQueue capacity.
TRACE_QUEUE_CAPACITY: Final = 1024
#: Records per trace message at most (RocketMQ's batchSize).
TRACE_BATCH_SIZE: Final = 100
#: The trace producer's maxMessageSize (RocketMQ's maxMsgSize); a batch closes 10000 below.
TRACE_MAX_MSG_SIZE: Final = 128_000
_SIZE_MARGIN: Final = 10_000
#: How long a record waits at most for its batch to fill (RocketMQ's waitTimeThresholdMil).
TRACE_WAIT_TIME_THRESHOLD_S: Final = 0.5
#: The trace producer's send timeout (RocketMQ's 5000 ms).
TRACE_SEND_TIMEOUT_S: Final = 5.0


class TraceDispatcherType(enum.Enum):
    """Whose records a dispatcher sends (RocketMQ's TraceDispatcher.Type)."""

    PRODUCE = "PRODUCE"
    CONSUME = "CONSUME"


def trace_producer_group(host_group: str, kind: TraceDispatcherType) -> str:
    """The group of the producer that sends a client's traces: RocketMQ's
    ``_INNER_TRACE_PRODUCER-<group>-<type>`` (without its per-process counter: one trace
    producer per client group here)."""
    return f"{GROUP_NAME_PREFIX}-{host_group}-{kind.value}"


class TraceSender(Protocol):
    """What sends the trace messages: a ``Producer`` of its own group."""

    async def start(self) -> None: ...

    async def shutdown(self) -> None: ...

    async def send(self, msg: Message, *, timeout_s: float | None = None) -> object: ...


class AsyncTraceDispatcher:
    """Owns the queue of trace records waiting to be sent, the task that sends them and the
    trace producer it was given (started and shut down with it). One event loop: the hooks
    call ``append`` on it; nothing here is thread safe."""

    def __init__(
        self,
        sender: TraceSender,
        trace_topic: str | None = None,
        *,
        queue_capacity: int = TRACE_QUEUE_CAPACITY,
        batch_size: int = TRACE_BATCH_SIZE,
        max_msg_size: int = TRACE_MAX_MSG_SIZE,
        wait_time_threshold_s: float = TRACE_WAIT_TIME_THRESHOLD_S,
        send_timeout_s: float = TRACE_SEND_TIMEOUT_S,
    ) -> None:
        self.trace_topic = trace_topic or DEFAULT_TRACE_TOPIC
        self._sender = sender
        self.queue_capacity = queue_capacity
        self.batch_size = batch_size
        self.max_msg_size = max_msg_size
        self.wait_time_threshold_s = wait_time_threshold_s
        self.send_timeout_s = send_timeout_s
        #: Each record with the monotonic time it was queued at.
        self._queue: deque[tuple[float, TraceContext]] = deque()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        #: Records dropped because the queue was full.
        self.discard_count = 0
        #: Records in trace messages the broker took, and in trace sends that failed.
        self.sent_records = 0
        self.failed_records = 0

    def append(self, ctx: TraceContext) -> bool:
        """Queue ``ctx`` for sending; False (and the record dropped) when the queue is full
        or the dispatcher stopped."""
        if len(self._queue) >= self.queue_capacity or self._stopping:
            self.discard_count += 1
            if self.discard_count & (self.discard_count - 1) == 0:  # 1, 2, 4, 8 ...: not a flood
                log.info("trace queue full: %d trace record(s) dropped", self.discard_count)
            return False
        self._queue.append((time.monotonic(), ctx))
        if len(self._queue) >= self.batch_size:
            self._wake.set()
        return True

    @property
    def queued(self) -> int:
        return len(self._queue)

    async def start(self) -> None:
        await self._sender.start()
        self._stopping = False
        self._task = asyncio.create_task(self._run(), name=f"trace-dispatcher-{self.trace_topic}")

    async def shutdown(self) -> None:
        """Send what is queued (each send within the trace send timeout), then stop the
        task and the trace producer."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        await self._task
        self._task = None
        await self._sender.shutdown()

    async def flush(self) -> None:
        """Send every queued record now."""
        while self._queue:
            await self._send_batch()

    async def _run(self) -> None:
        """Full batches go at once; a partial one when its oldest record has waited the
        threshold (sending whatever is queued after each send would degrade into one
        record per trace message under a steady stream of sends)."""
        while not self._stopping:
            try:
                async with asyncio.timeout(self._wait_left_s()):
                    await self._wake.wait()
            except TimeoutError:
                pass
            self._wake.clear()
            while len(self._queue) >= self.batch_size or (self._queue and self._wait_left_s() <= 0):
                await self._send_batch()
        await self.flush()

    def _wait_left_s(self) -> float:
        """How long until the oldest queued record has waited the threshold."""
        if not self._queue:
            return self.wait_time_threshold_s
        return self._queue[0][0] + self.wait_time_threshold_s - time.monotonic()

    async def _send_batch(self) -> None:
        """One trace message of at most batch_size records and about max_msg_size text."""
        data: list[str] = []
        keys: set[str] = set()
        size = 0
        limit = self.max_msg_size - _SIZE_MARGIN
        while self._queue and len(data) < self.batch_size and size < limit:
            bean = encode_trace_context(self._queue.popleft()[1])
            data.append(bean.trans_data)
            keys |= bean.trans_keys
            size += len(bean.trans_data)
        msg = Message(self.trace_topic, "".join(data).encode())
        msg.keys = sorted(keys)
        try:
            await self._sender.send(msg, timeout_s=self.send_timeout_s)
        except Exception as exc:
            # Tracing never fails the application: the records are lost, as in RocketMQ.
            self.failed_records += len(data)
            log.info("trace send of %d record(s) to %s failed: %s", len(data), msg.topic, exc)
        else:
            self.sent_records += len(data)
