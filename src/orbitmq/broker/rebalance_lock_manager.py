"""``RebalanceLockManager``: which client of a group owns which queue, for orderly
consumption (RocketMQ's ``RebalanceLockManager``, LOCK_BATCH_MQ 41 / UNLOCK_BATCH_MQ 42).

A lock is held by one client id per (group, queue) and lapses when its holder has not
renewed it for ``REBALANCE_LOCK_MAX_LIVE_TIME_MS`` (60 s); locking again renews it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from orbitmq.common import MessageQueue
from orbitmq.common.clock import SYSTEM_CLOCK, Clock

log = logging.getLogger(__name__)

#: RocketMQ's ``rocketmq.broker.rebalance.lockMaxLiveTime`` default.
REBALANCE_LOCK_MAX_LIVE_TIME_MS: Final = 60_000


@dataclass(slots=True)
class _LockEntry:
    client_id: str
    last_update_ms: int


class RebalanceLockManager:
    """Table group -> MessageQueue -> (client id, last update). Thread-safe (one lock)."""

    def __init__(
        self,
        *,
        clock: Clock = SYSTEM_CLOCK,
        max_live_time_ms: int = REBALANCE_LOCK_MAX_LIVE_TIME_MS,
    ) -> None:
        self._clock = clock
        self._max_live_time_ms = max_live_time_ms
        self._lock = threading.Lock()
        self._table: dict[str, dict[MessageQueue, _LockEntry]] = {}

    def _expired(self, entry: _LockEntry, now_ms: int) -> bool:
        return now_ms - entry.last_update_ms > self._max_live_time_ms

    def try_lock_batch(
        self, group: str, mqs: Iterable[MessageQueue], client_id: str
    ) -> set[MessageQueue]:
        """Lock (or renew) each queue for ``client_id``; the queues it now holds. A queue
        held by another client is taken over only once that lock has expired."""
        locked: set[MessageQueue] = set()
        with self._lock:
            now = self._clock.now_ms()
            queues = self._table.setdefault(group, {})
            for mq in mqs:
                entry = queues.get(mq)
                if entry is None:
                    queues[mq] = _LockEntry(client_id, now)
                    log.info(
                        "tryLockBatch, %s not locked, %s got it (group %s)", mq, client_id, group
                    )
                    locked.add(mq)
                elif entry.client_id == client_id:
                    # RocketMQ renews its own lock even when it had lapsed meanwhile.
                    entry.last_update_ms = now
                    locked.add(mq)
                elif self._expired(entry, now):
                    log.warning(
                        "tryLockBatch, %s lock of %s expired, %s got it (group %s)",
                        mq,
                        entry.client_id,
                        client_id,
                        group,
                    )
                    entry.client_id = client_id
                    entry.last_update_ms = now
                    locked.add(mq)
                else:
                    log.warning(
                        "tryLockBatch, %s locked by %s, refused to %s (group %s)",
                        mq,
                        entry.client_id,
                        client_id,
                        group,
                    )
        return locked

    def unlock_batch(self, group: str, mqs: Iterable[MessageQueue], client_id: str) -> None:
        """Release the queues ``client_id`` holds; queues held by others stay locked."""
        with self._lock:
            queues = self._table.get(group)
            if queues is None:
                log.warning("unlockBatch, group %s does not exist (%s)", group, client_id)
                return
            for mq in mqs:
                entry = queues.get(mq)
                if entry is None:
                    log.warning("unlockBatch, %s not locked (group %s, %s)", mq, group, client_id)
                elif entry.client_id == client_id:
                    del queues[mq]
                    log.info("unlockBatch, group %s %s %s", group, mq, client_id)
                else:
                    log.warning(
                        "unlockBatch, %s locked by other client %s (group %s, %s)",
                        mq,
                        entry.client_id,
                        group,
                        client_id,
                    )
            if not queues:
                del self._table[group]

    def is_locked(self, group: str, mq: MessageQueue, client_id: str) -> bool:
        """True when ``client_id`` holds an unexpired lock on ``mq`` (does not renew)."""
        with self._lock:
            entry = self._table.get(group, {}).get(mq)
            return (
                entry is not None
                and entry.client_id == client_id
                and not self._expired(entry, self._clock.now_ms())
            )
