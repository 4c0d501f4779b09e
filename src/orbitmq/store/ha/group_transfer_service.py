"""GroupTransferService: a SYNC_MASTER's sends waiting for a slave (RocketMQ's HAService
GroupTransferService). A send's request is answered PUT_OK once a slave reported an offset
at or past its message's end; one report answers every request it covers (group transfer)."""

from __future__ import annotations

import threading

from orbitmq.store.put_message_result import PutMessageStatus
from orbitmq.store.put_wait import GroupCommitRequest, answer_requests

#: Every this many requests added, those whose waiter gave up are dropped, so that a slave
#: that stays connected but stops reporting cannot grow the list without bound.
_PRUNE_EVERY = 4096


class GroupTransferService:
    """Owns the requests waiting for a slave's report and the highest offset reported.

    RocketMQ answers them from a thread woken every 10 ms; here the thread that reads a
    report answers them at once (no hand-over, no polling), and a request nobody answers is
    timed out by its own waiter (``slaveTimeout``). Safe from any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[GroupCommitRequest] = []
        self._added = 0
        #: The highest offset any slave reported: everything below it is on a slave.
        self.push2_slave_max_offset = 0

    @property
    def waiting(self) -> int:
        """Requests not answered yet (for stats and tests)."""
        return len(self._requests)

    def put_request(self, request: GroupCommitRequest) -> None:
        """Wait for ``request``; answered at once when a slave already holds it."""
        with self._lock:
            if request.next_offset <= self.push2_slave_max_offset:
                ready = True
            else:
                ready = False
                self._requests.append(request)
                self._added += 1
                if self._added % _PRUNE_EVERY == 0:
                    self._requests = [r for r in self._requests if not r.abandoned]
        if ready:
            answer_requests([(request, PutMessageStatus.PUT_OK)])

    def notify_transfer_some(self, offset: int) -> bool:
        """A slave holds everything below ``offset``: answer the requests it covers. True
        when it moved ``push2_slave_max_offset``."""
        with self._lock:
            if offset <= self.push2_slave_max_offset:
                return False
            self.push2_slave_max_offset = offset
            done = [r for r in self._requests if r.next_offset <= offset]
            if done:
                self._requests = [r for r in self._requests if r.next_offset > offset]
        if done:
            answer_requests([(r, PutMessageStatus.PUT_OK) for r in done if not r.abandoned])
        return True
