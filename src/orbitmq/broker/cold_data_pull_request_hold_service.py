"""``ColdDataPullRequestHoldService``: pulls of a flow-controlled group that would read cold
data, held for a while and then run again (RocketMQ 5's ``ColdDataPullRequestHoldService``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from orbitmq.broker.pull_request_hold_service import PullRequest, Wakeup
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.store import MessageStoreConfig

log = logging.getLogger(__name__)

#: The ext field a released pull carries: run again, it is not held a second time (it
#: reads one message instead).
NO_SUSPEND_KEY: Final = "_noSuspend_"
#: A held pull is released once it has waited this long (ms), on the next check.
COLD_HOLD_TIMEOUT_MILLIS: Final = 3000
#: How often held pulls are checked while the flow control is on (s); 20 s while off.
CHECK_INTERVAL_S: Final = 5.0
IDLE_CHECK_INTERVAL_S: Final = 20.0
#: At most this many pulls are held; more are dropped (their clients time out and retry).
MAX_HELD: Final = 10_000


class ColdDataPullRequestHoldService:
    """Owns the held cold pulls, in arrival order. A held pull is released (marked with
    ``NO_SUSPEND_KEY`` and run again through ``wakeup``) on the first check after it has
    waited ``COLD_HOLD_TIMEOUT_MILLIS``: 3 to 8 s. Event-loop confined."""

    def __init__(self, store_config: MessageStoreConfig, wakeup: Wakeup) -> None:
        self.store_config = store_config
        self._wakeup = wakeup
        self.held: list[PullRequest] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(
                run_every(self._interval_s, self.check_cold_data_pull_request, "coldDataHold"),
                name="ColdDataPullRequestHoldService",
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        self.held.clear()

    def _interval_s(self) -> float:
        enabled = self.store_config.cold_data_flow_control_enable
        return CHECK_INTERVAL_S if enabled else IDLE_CHECK_INTERVAL_S

    def suspend_cold_data_read_request(self, request: PullRequest) -> bool:
        """Hold ``request``; False (dropped) when the flow control is off or the queue full."""
        if not self.store_config.cold_data_flow_control_enable or len(self.held) >= MAX_HELD:
            return False
        self.held.append(request)
        return True

    def check_cold_data_pull_request(self) -> int:
        """Release the pulls held long enough; returns how many."""
        held_since = asyncio.get_running_loop().time() - COLD_HOLD_TIMEOUT_MILLIS / 1000
        due: list[PullRequest] = []
        kept: list[PullRequest] = []
        for request in self.held:
            (due if request.suspend_timestamp_s <= held_since else kept).append(request)
        if not due:
            return 0
        self.held = kept
        for request in due:
            request.request.ext_fields[NO_SUSPEND_KEY] = "1"
            self._wakeup(request)
        log.info(
            "checkColdPullRequest-info-finish, queueSize: %d released: %d",
            len(kept) + len(due),
            len(due),
        )
        return len(due)
