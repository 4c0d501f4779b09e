"""``NamesrvRegistrationService``: keeps the broker registered with every name server
(RocketMQ's registerBrokerAll at startup, its scheduled re-registration, and the immediate
one after a send creates a topic)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from orbitmq.broker.broker_outer_api import BrokerIdentity, BrokerOuterAPI, RegisterBrokerResult
from orbitmq.common.periodic import cancel_and_wait
from orbitmq.protocol import TopicConfig, TopicConfigSerializeWrapper

log = logging.getLogger(__name__)


def registration_period_s(register_name_server_period_ms: int) -> float:
    """RocketMQ's clamp of registerNameServerPeriod: between 10 s and 60 s."""
    return max(10_000, min(register_name_server_period_ms, 60_000)) / 1000


class NamesrvRegistrationService:
    """Registers at ``start`` (awaited, so a started broker is routable), then every
    ``period_s`` and whenever ``request_registration`` is called (from any thread, e.g.
    ``TopicConfigManager``'s on_new_topic callback); requests made while one registration
    runs are folded into the next. ``stop`` unregisters. Failures are logged, never raised.
    Runs on one event loop."""

    def __init__(
        self,
        outer_api: BrokerOuterAPI,
        namesrv_addresses: list[str],
        identity: Callable[[], BrokerIdentity],
        topic_configs: Callable[[], TopicConfigSerializeWrapper],
        *,
        period_s: float,
        timeout_s: float,
        order_topics: Callable[[frozenset[str]], None] | None = None,
        on_registered: Callable[[RegisterBrokerResult], None] | None = None,
    ) -> None:
        self.outer_api = outer_api
        self.namesrv_addresses = list(namesrv_addresses)
        self._identity = identity
        self._topic_configs = topic_configs
        #: Told the first answer's ORDER_TOPIC_CONFIG topics (RocketMQ's
        #: updateOrderTopicConfig after registerBrokerAll); runs in a thread (it persists).
        self._order_topics = order_topics
        #: Told every name server's answer (a slave learns its master's HA address).
        self._on_registered = on_registered
        self.period_s = period_s
        self.timeout_s = timeout_s
        #: How many registration rounds have completed, and the last round's answers.
        self.rounds = 0
        self.last_results: list[RegisterBrokerResult] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._round_done: asyncio.Condition | None = None

    async def start(self) -> None:
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._wakeup = asyncio.Event()
        self._round_done = asyncio.Condition()
        if not self.namesrv_addresses:
            log.info("no name server configured (namesrvAddr): not registering")
        await self.register_now()
        self._task = asyncio.create_task(self._run(), name="registerBrokerAll")

    def request_registration(self) -> None:
        """Register again soon; safe from any thread."""
        loop, wakeup = self._loop, self._wakeup
        if loop is None or wakeup is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(wakeup.set)

    def on_new_topic(self, topic_config: TopicConfig) -> None:
        """``TopicConfigManager``'s on_new_topic callback."""
        log.info("new topic %s: registering with the name servers", topic_config.topic_name)
        self.request_registration()

    async def register_now(self) -> list[RegisterBrokerResult]:
        """One round: REGISTER_BROKER to every name server concurrently."""
        results: list[RegisterBrokerResult] = []
        if self.namesrv_addresses:
            try:
                results = await self.outer_api.register_broker_all(
                    self.namesrv_addresses,
                    self._identity(),
                    self._topic_configs(),
                    self.timeout_s,
                )
            except Exception:
                log.exception("registerBrokerAll failed")
        if results and results[0].order_topics is not None and self._order_topics is not None:
            try:
                await asyncio.to_thread(self._order_topics, results[0].order_topics)
            except Exception:
                log.exception("updating the order topics failed")
        if self._on_registered is not None:
            for result in results:
                self._on_registered(result)
        self.last_results = results
        self.rounds += 1
        if self._round_done is not None:
            async with self._round_done:
                self._round_done.notify_all()
        return results

    async def wait_rounds(self, rounds: int) -> None:
        """Wait until at least ``rounds`` rounds have completed (for tests and tools)."""
        assert self._round_done is not None, "not started"
        async with self._round_done:
            await self._round_done.wait_for(lambda: self.rounds >= rounds)

    async def _run(self) -> None:
        assert self._wakeup is not None
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.period_s):
                    await self._wakeup.wait()
            self._wakeup.clear()
            await self.register_now()

    async def stop(self, *, unregister: bool = True) -> None:
        """Stop re-registering, unregister from every name server, close the connections."""
        task, self._task = self._task, None
        await cancel_and_wait(task)
        if unregister and self.namesrv_addresses and self._loop is not None:
            try:
                await self.outer_api.unregister_broker_all(
                    self.namesrv_addresses, self._identity(), self.timeout_s
                )
            except Exception:
                log.exception("unregisterBrokerAll failed")
        self._loop = None
        await self.outer_api.close()
