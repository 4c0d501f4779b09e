"""``SlaveSynchronize``: a slave's copy of its master's metadata (RocketMQ's
``SlaveSynchronize`` and the task ``BrokerController.handleSlaveSynchronize`` schedules).

First 3 s after start, then every 10 s, a slave asks its master (the address the name server
gave at registration, ``MasterAddress``) for GET_ALL_TOPIC_CONFIG, GET_ALL_CONSUMER_OFFSET,
GET_ALL_DELAY_OFFSET and GET_ALL_SUBSCRIPTIONGROUP_CONFIG and applies each answer as RocketMQ
does: topics and subscription groups are replaced whole when their DataVersion differs,
consumer offsets are merged (putAll), and the delay offsets' text is written as
delayOffset.json; each table is then saved. One failed request is logged and does not stop
the other three."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from orbitmq.broker.broker_outer_api import BrokerOuterAPI
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.master_address import MasterAddress
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common import ConfigFile
from orbitmq.common.periodic import cancel_and_wait, run_every

log = logging.getLogger(__name__)

#: RocketMQ's schedule: the first sync 3 s after start, then one every 10 s.
INITIAL_DELAY_S: Final = 3.0
PERIOD_S: Final = 10.0


class SlaveSynchronize:
    """Owns the slave's sync task and its own connection to the master (a
    ``BrokerOuterAPI``). Writes into the managers it is given, which are thread-safe; their
    saves run in worker threads. Use from one event loop."""

    def __init__(
        self,
        master_address: MasterAddress,
        own_addr: Callable[[], str],
        topic_config_manager: TopicConfigManager,
        consumer_offset_manager: ConsumerOffsetManager,
        subscription_group_manager: SubscriptionGroupManager,
        delay_offset_file: ConfigFile,
        *,
        outer_api: BrokerOuterAPI | None = None,
        initial_delay_s: float = INITIAL_DELAY_S,
        period_s: float = PERIOD_S,
    ) -> None:
        self.master_address = master_address
        self._own_addr = own_addr
        self.topic_config_manager = topic_config_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.subscription_group_manager = subscription_group_manager
        self.delay_offset_file = delay_offset_file
        self.outer_api = outer_api or BrokerOuterAPI()
        self.initial_delay_s = initial_delay_s
        self.period_s = period_s
        #: Completed sync rounds that had a master to ask (for tests and tools).
        self.rounds = 0
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="SlaveSynchronize")

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        await self.outer_api.close()

    async def _run(self) -> None:
        await asyncio.sleep(self.initial_delay_s)
        await self._sync_all_logged()
        await run_every(self.period_s, self._sync_all_logged, "slave synchronize")

    async def _sync_all_logged(self) -> None:
        try:
            await self.sync_all()
        except Exception:
            log.exception("slave synchronize failed")

    async def sync_all(self) -> bool:
        """One round (RocketMQ's syncAll); False when there is no master to ask (none known,
        or the master address is this broker's own)."""
        master = self.master_address.master_addr
        if master is None or master == self._own_addr():
            return False
        for name, step in (
            ("topic config", self._sync_topic_config),
            ("consumer offset", self._sync_consumer_offset),
            ("delay offset", self._sync_delay_offset),
            ("subscription group", self._sync_subscription_group_config),
        ):
            try:
                await step(master)
            except Exception as exc:
                log.error("sync %s from master %s failed: %s", name, master, exc)
        self.rounds += 1
        return True

    async def _sync_topic_config(self, master: str) -> None:
        wrapper = await self.outer_api.get_all_topic_config(master)
        changed = await asyncio.to_thread(
            self.topic_config_manager.replace_from_master,
            wrapper.topic_config_table,
            wrapper.data_version,
        )
        if changed:
            log.info("Update slave topic config from master, %s", master)

    async def _sync_consumer_offset(self, master: str) -> None:
        wrapper = await self.outer_api.get_all_consumer_offset(master)
        self.consumer_offset_manager.merge_from_master(wrapper.offset_table)
        await asyncio.to_thread(self.consumer_offset_manager.persist)
        log.debug("Update slave consumer offset from master, %s", master)

    async def _sync_delay_offset(self, master: str) -> None:
        content = await self.outer_api.get_all_delay_offset(master)
        if content:
            await asyncio.to_thread(self.delay_offset_file.save_bytes, content)
        log.debug("Update slave delay offset from master, %s", master)

    async def _sync_subscription_group_config(self, master: str) -> None:
        wrapper = await self.outer_api.get_all_subscription_group_config(master)
        changed = await asyncio.to_thread(
            self.subscription_group_manager.replace_from_master,
            wrapper.subscription_group_table,
            wrapper.data_version,
        )
        if changed:
            log.info("Update slave Subscription Group from master, %s", master)
