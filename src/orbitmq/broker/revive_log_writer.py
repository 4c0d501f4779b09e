"""``ReviveLogWriter``: the one way records reach the revive log (check points, acks, FIFO
acks), written together.

Every POP answer needs its check points in the log before it goes out, and every ack its
record before it is answered; written one by one, each record cost a put and a dispatch of
its own. The writer collects the records asked for during one turn of the event loop and
writes them with one append (``MessageStore.put_message_group``), in the order asked, then
answers every waiter. Acks of one check point asked for in the same turn become one record
(``ack`` for one offset, ``bAck`` for several, as RocketMQ's PopBufferMergeService merges
them): a POP answer's 32 acks, sent together, cost one record.

When the store answers puts only after a sync flush or a slave's copy (SYNC_FLUSH,
SYNC_MASTER), the records go through ``async_put_message`` one by one instead, so that an
ack is answered only once it is as durable as a sent message would be.
"""

from __future__ import annotations

import asyncio
import logging

from orbitmq.broker.pop_check_point import AckMsg, PopCheckPoint, revive_record
from orbitmq.common import MessageExtBrokerInner
from orbitmq.common.clock import Clock
from orbitmq.store import MessageStore

log = logging.getLogger(__name__)

#: (revive queue id, record, tag or None); acks are merged before they become messages.
_Entry = tuple[int, PopCheckPoint | AckMsg, str | None]


class ReviveLogWriter:
    """Owns the revive records not written yet and their waiters. Use from the broker's
    event loop only (the first loop that writes; the writer keeps it)."""

    def __init__(self, store: MessageStore, revive_topic: str, clock: Clock) -> None:
        self.store = store
        self.revive_topic = revive_topic
        self.clock = clock
        self._entries: list[_Entry] = []
        self._waiters: list[list[asyncio.Future[bool]]] = []
        #: (revive queue, check point key) -> index in ``_entries`` of its merged ack.
        self._acks: dict[tuple[int, tuple[str, str, int, int, int]], int] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.records_written = 0

    async def write(
        self, revive_qid: int, record: PopCheckPoint | AckMsg, tag: str | None = None
    ) -> bool:
        """Have ``record`` in revive queue ``revive_qid``; False when the store refused it."""
        return await self._add(revive_qid, record, tag, merge=False)

    async def write_ack(self, revive_qid: int, ack: AckMsg) -> bool:
        """Have ``ack`` in the log, merged with the other acks of its check point asked for
        in the same turn; False when the store refused the record."""
        return await self._add(revive_qid, ack, None, merge=True)

    async def _add(
        self, revive_qid: int, record: PopCheckPoint | AckMsg, tag: str | None, *, merge: bool
    ) -> bool:
        loop = self._loop
        if loop is None:
            # Taken once: in Python 3.11 every get_running_loop() is a getpid system call.
            loop = self._loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        if not self._entries:
            # After the requests already queued on the loop: they join this write.
            loop.call_soon(self._flush)
        index = None
        if merge and isinstance(record, AckMsg):
            index = self._acks.get((revive_qid, record.key))
        if index is None:
            if merge and isinstance(record, AckMsg):
                record = AckMsg(
                    record.consumer_group,
                    record.topic,
                    record.queue_id,
                    record.start_offset,
                    record.pop_time,
                    list(record.ack_offsets),
                    record.broker_name,
                )
                self._acks[(revive_qid, record.key)] = len(self._entries)
            self._entries.append((revive_qid, record, tag))
            self._waiters.append([waiter])
        else:
            merged = self._entries[index][1]
            assert isinstance(merged, AckMsg) and isinstance(record, AckMsg)
            merged.ack_offsets.extend(record.ack_offsets)
            self._waiters[index].append(waiter)
        return await waiter

    def _flush(self) -> None:
        entries, waiters = self._entries, self._waiters
        self._entries, self._waiters, self._acks = [], [], {}
        host, now = self.store.commit_log.store_host, self.clock.now_ms()
        msgs = [
            revive_record(self.revive_topic, qid, record, host, now, tag)
            for qid, record, tag in entries
        ]
        store = self.store
        if store.group_commit_service is None and store.group_transfer is None:
            # Nothing to wait for (ASYNC_FLUSH, no sync slave): one append for all.
            try:
                # Dispatched here: waking the reput thread for each group cost two thread
                # switches (GIL hand-offs) per group, more than dispatching a few records.
                results = store.put_message_group(msgs, dispatch_inline=True)
                outcomes = [result.is_ok for result in results]
            except Exception:
                # Answered, not left hanging: the records' requests fail, the broker goes on.
                log.exception("revive log records not stored")
                outcomes = [False] * len(msgs)
            self._answer(waiters, outcomes)
        else:
            assert self._loop is not None  # set by the _add that scheduled this flush
            task = self._loop.create_task(self._put_one_by_one(msgs, waiters))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _put_one_by_one(
        self, msgs: list[MessageExtBrokerInner], waiters: list[list[asyncio.Future[bool]]]
    ) -> None:
        outcomes = [False] * len(msgs)
        try:
            for i, msg in enumerate(msgs):
                outcomes[i] = (await self.store.async_put_message(msg)).is_ok
        finally:
            self._answer(waiters, outcomes)

    def _answer(self, waiters: list[list[asyncio.Future[bool]]], outcomes: list[bool]) -> None:
        for group, ok in zip(waiters, outcomes, strict=True):
            if ok:
                self.records_written += 1
            else:
                log.warning("a revive log record was not stored")
            for waiter in group:
                if not waiter.done():
                    waiter.set_result(ok)
