"""``ClientHousekeeping``: clears a connection's producer and consumer registrations when it
closes, fails or idles out, and drops registrations whose heartbeats stopped (RocketMQ's
``ClientHousekeepingService``)."""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.remoting import ChannelContext, ChannelEventListener

log = logging.getLogger(__name__)

#: RocketMQ scans for silent clients every 10 s.
SCAN_INTERVAL_S: Final = 10.0


class ClientHousekeeping(ChannelEventListener):
    """A ``ChannelEventListener`` on the broker's ``RemotingServer`` plus an optional scan
    task (``start`` / ``stop``). Event-loop confined, like the managers it clears."""

    def __init__(
        self,
        consumer_manager: ConsumerManager,
        producer_manager: ProducerManager,
        scan_interval_s: float = SCAN_INTERVAL_S,
    ) -> None:
        self.consumer_manager = consumer_manager
        self.producer_manager = producer_manager
        self.scan_interval_s = scan_interval_s
        self._task: asyncio.Task[None] | None = None

    def on_close(self, ctx: ChannelContext) -> None:
        self._remove(ctx)

    def on_exception(self, ctx: ChannelContext, error: BaseException) -> None:
        self._remove(ctx)

    def on_idle(self, ctx: ChannelContext) -> None:
        self._remove(ctx)

    def _remove(self, ctx: ChannelContext) -> None:
        # A channel may report exception or idle and then close: the second call finds
        # nothing left to remove, so nobody is notified twice.
        self.consumer_manager.do_channel_close_event(ctx)
        self.producer_manager.do_channel_close_event(ctx)

    def scan_exception_channel(self) -> None:
        self.producer_manager.scan_not_active_channel()
        self.consumer_manager.scan_not_active_channel()

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="ClientHousekeepingScheduledThread")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def _loop(self) -> None:
        await run_every(self.scan_interval_s, self.scan_exception_channel, "scan client channels")
