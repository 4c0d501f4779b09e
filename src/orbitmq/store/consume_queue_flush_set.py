"""Which consume queues a flush round visits, so that a round does not walk every queue of
the broker (R19: ten thousand queues)."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from orbitmq.store.consume_queue import ConsumeQueue


class ConsumeQueueFlushSet:
    """Owns the queues written since the last round (``mark``, from the dispatch thread) and
    those a round left with units to sync (fewer dirty pages than a regular round syncs): a
    thorough round visits them, a regular one once they are written again. ``mark`` is safe
    from any thread; ``flush`` and ``keep_unflushed`` belong to one thread at a time (the
    flush thread, or recovery before it starts)."""

    def __init__(self) -> None:
        self._dirty: set[ConsumeQueue] = set()
        self._lock = threading.Lock()
        self._unflushed: set[ConsumeQueue] = set()

    def mark(self, queue: ConsumeQueue) -> None:
        """``queue`` got units."""
        with self._lock:
            self._dirty.add(queue)

    def keep_unflushed(self, queues: Iterable[ConsumeQueue]) -> None:
        """Visit ``queues`` at the next thorough round (what recovery cut or rebuilt)."""
        self._unflushed.update(queues)

    def flush(self, least_pages: int) -> None:
        """A regular round (``least_pages`` > 0) syncs the queues written since the last one,
        a thorough one (0) also those left with a few units to sync."""
        with self._lock:
            candidates, self._dirty = self._dirty, set()
        if least_pages <= 0:
            candidates |= self._unflushed
            self._unflushed = set()
        left = set(candidates)
        try:
            for queue in candidates:
                queue.flush(least_pages)
                if not queue.has_unflushed_units:
                    left.discard(queue)
        finally:
            self._unflushed |= left
