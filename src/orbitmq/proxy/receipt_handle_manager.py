"""``ReceiptHandleManager``: the receipt handles of auto-renewed receives (RocketMQ 5's proxy
``DefaultReceiptHandleManager``). A PushConsumer receives with ``auto_renew``: the endpoint,
not the client, keeps each message invisible while the client consumes it, by changing its
invisible time shortly before it ends (renewAheadTimeMillis, 10 s), for 1, 3, 5, 10, 30
minutes and then every hour (RenewStrategyPolicy), for at most 3 hours (renewMaxTimeMillis).

Each renewal gives the message a new handle; the client still acks (or changes) with the one
it received, so ``remove`` answers the current one. A handle that fails to renew 3 times
(maxRenewRetryTimes) is dropped: the message comes back at its invisible time's end. When a
client goes, its messages are made visible again after 1 s (invisibleTimeMillisWhenClear)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from orbitmq.common.periodic import cancel_and_wait
from orbitmq.protocol.pop_extra_info import ReceiptHandle

log = logging.getLogger(__name__)

RENEW_AHEAD_MS: Final = 10_000
RENEW_MAX_MS: Final = 3 * 3600 * 1000
RENEW_PERIOD_S: Final = 5.0
RENEW_STEPS_MS: Final = (60_000, 180_000, 300_000, 600_000, 1_800_000, 3_600_000)
MAX_RENEW_RETRIES: Final = 3
CLEAR_INVISIBLE_MS: Final = 1_000

#: (group, topic, handle, invisible ms) -> the changed handle, or None when refused.
ChangeInvisible = Callable[[str, str, ReceiptHandle, int], Awaitable[ReceiptHandle | None]]


@dataclass(slots=True)
class _Tracked:
    topic: str
    handle: ReceiptHandle
    consumed_at_ms: int
    renew_times: int = 0
    retries: int = 0


class ReceiptHandleManager:
    """Owns the auto-renewed handles, by (client id, group) then message id, and the loop
    that renews them. Use from the broker's event loop."""

    def __init__(
        self,
        change: ChangeInvisible,
        now_ms: Callable[[], int],
        *,
        period_s: float = RENEW_PERIOD_S,
        ahead_ms: int = RENEW_AHEAD_MS,
        max_ms: int = RENEW_MAX_MS,
        steps_ms: tuple[int, ...] = RENEW_STEPS_MS,
    ) -> None:
        self._change, self._now_ms = change, now_ms
        self.period_s, self.ahead_ms, self.max_ms, self.steps_ms = (
            period_s,
            ahead_ms,
            max_ms,
            steps_ms,
        )
        self._groups: dict[tuple[str, str], dict[str, _Tracked]] = {}
        self._task: asyncio.Task[None] | None = None

    def add(
        self, client_id: str, group: str, topic: str, message_id: str, handle: ReceiptHandle
    ) -> None:
        tracked = _Tracked(topic, handle, self._now_ms())
        self._groups.setdefault((client_id, group), {})[message_id] = tracked

    def current(self, client_id: str, group: str, message_id: str) -> ReceiptHandle | None:
        """The message's handle now (None when not renewed here)."""
        tracked = self._groups.get((client_id, group), {}).get(message_id)
        return None if tracked is None else tracked.handle

    def remove(self, client_id: str, group: str, message_id: str) -> ReceiptHandle | None:
        """Stop renewing the message; its current handle (None when not renewed here)."""
        handles = self._groups.get((client_id, group))
        tracked = handles.pop(message_id, None) if handles is not None else None
        if handles is not None and not handles:
            del self._groups[(client_id, group)]
        return None if tracked is None else tracked.handle

    def __len__(self) -> int:
        return sum(len(handles) for handles in self._groups.values())

    async def clear_client(self, client_id: str) -> None:
        """The client is gone: its messages come back to the group in 1 s."""
        for key in [key for key in self._groups if key[0] == client_id]:
            for tracked in self._groups.pop(key).values():
                await self._change(key[1], tracked.topic, tracked.handle, CLEAR_INVISIBLE_MS)

    async def renew_due(self) -> None:
        """One scan (``scheduleRenewTask``): renew every handle that ends within the ahead
        time; drop those past the renewal limit or out of retries."""
        now = self._now_ms()
        for (client_id, group), handles in list(self._groups.items()):
            for message_id, tracked in list(handles.items()):
                if tracked.handle.extra.revive_time - now > self.ahead_ms:
                    continue
                if (
                    now - tracked.consumed_at_ms >= self.max_ms
                    or tracked.retries >= MAX_RENEW_RETRIES
                ):
                    handles.pop(message_id, None)
                    continue
                step = self.steps_ms[min(tracked.renew_times, len(self.steps_ms) - 1)]
                try:
                    renewed = await self._change(group, tracked.topic, tracked.handle, step)
                except Exception:
                    log.exception("renewing %s of %s/%s failed", message_id, client_id, group)
                    renewed = None
                if renewed is None:
                    tracked.retries += 1
                else:
                    tracked.handle, tracked.retries = renewed, 0
                    tracked.renew_times += 1
            if not handles:
                self._groups.pop((client_id, group), None)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.period_s)
            try:
                await self.renew_due()
            except Exception:
                log.exception("receipt handle renewal failed")

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="receipt handle renewal")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
