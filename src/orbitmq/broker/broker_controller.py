"""``BrokerController``: the broker's wiring (RocketMQ's ``BrokerController``): the store,
the metadata managers, the processors, the one table of request codes and the periodic
tasks. Name-server registration comes later."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from types import TracebackType

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.pull_message_processor import PullMessageProcessor, SubscriptionLookup
from orbitmq.broker.send_message_processor import SendMessageProcessor
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.protocol import RequestCode
from orbitmq.remoting import RemotingServer, RequestExecutor, RequestProcessor
from orbitmq.store import MessageStore, MessageStoreConfig

log = logging.getLogger(__name__)


class BrokerController:
    """Owns one broker: its ``MessageStore``, ``TopicConfigManager``,
    ``SubscriptionGroupManager``, ``ConsumerOffsetManager``, processors, ``RemotingServer``
    and the consumer-offset persist task.

    ``start`` loads the metadata and the store (recovery), starts the store and the
    long-polling service, then listens; ``stop`` undoes it and saves the offsets. The store
    host written into every message (and its offset message id) is
    ``broker_ip1:listen_port`` from the configuration, so a broker on port 0 writes port 0
    there. Use from one event loop.
    """

    def __init__(
        self,
        broker_config: BrokerConfig,
        store_config: MessageStoreConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
        find_subscription: SubscriptionLookup | None = None,
    ) -> None:
        self.broker_config = broker_config
        self.store_config = store_config
        self.topic_config_manager = TopicConfigManager(
            broker_config, store_config.config_file("topics"), clock=clock
        )
        self.subscription_group_manager = SubscriptionGroupManager(
            broker_config, store_config.config_file("subscriptionGroup"), clock=clock
        )
        self.consumer_offset_manager = ConsumerOffsetManager(
            store_config.config_file("consumerOffset")
        )
        self.message_store = MessageStore(
            store_config,
            store_host=(broker_config.broker_ip1, broker_config.listen_port),
            clock=clock,
            message_arriving_listener=self._message_arriving,
        )
        self.send_message_processor = SendMessageProcessor(
            broker_config,
            store_config,
            self.message_store,
            self.topic_config_manager,
            self.subscription_group_manager,
        )
        self.pull_message_processor = PullMessageProcessor(
            broker_config,
            store_config,
            self.message_store,
            self.topic_config_manager,
            self.subscription_group_manager,
            self.consumer_offset_manager,
            find_subscription,
        )
        self.pull_request_hold_service = self.pull_message_processor.pull_request_hold_service
        self.remoting_server = RemotingServer(
            "0.0.0.0",
            broker_config.listen_port,
            channel_max_idle_s=float(broker_config.server_channel_max_idle_time_seconds),
        )
        send_executor = RequestExecutor(
            "SendMessageExecutor", broker_config.send_thread_pool_queue_capacity
        )
        pull_executor = RequestExecutor(
            "PullMessageExecutor", broker_config.pull_thread_pool_queue_capacity
        )
        send, pull = self.send_message_processor, self.pull_message_processor
        # The routing table, in one place (RocketMQ's registerProcessor).
        self.registrations: list[tuple[int, RequestProcessor, RequestExecutor]] = [
            (RequestCode.SEND_MESSAGE, send, send_executor),
            (RequestCode.SEND_MESSAGE_V2, send, send_executor),
            (RequestCode.SEND_BATCH_MESSAGE, send, send_executor),
            (RequestCode.PULL_MESSAGE, pull, pull_executor),
        ]
        for code, processor, executor in self.registrations:
            self.remoting_server.register_processor(code, processor, executor)
        self._persist_task: asyncio.Task[None] | None = None

    def _message_arriving(self, topic: str, queue_id: int, max_offset: int) -> None:
        # Called from the store's reput thread.
        self.pull_request_hold_service.message_arriving(topic, queue_id, max_offset)

    @property
    def port(self) -> int:
        """The bound port, once started."""
        return self.remoting_server.port

    @property
    def address(self) -> str:
        return f"{self.broker_config.broker_ip1}:{self.port}"

    async def start(self) -> None:
        self.topic_config_manager.load()
        self.subscription_group_manager.load()
        self.consumer_offset_manager.load()
        report = await asyncio.to_thread(self.message_store.load)
        log.info("store loaded: %s", report)
        self.message_store.start()
        await self.pull_request_hold_service.start()
        await self.remoting_server.start()
        if self._persist_task is None:
            self._persist_task = asyncio.create_task(
                self._persist_offsets_loop(), name="persistConsumerOffset"
            )
        log.info("broker %s started on %s", self.broker_config.broker_name, self.address)

    async def stop(self) -> None:
        task, self._persist_task = self._persist_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.remoting_server.stop()
        await self.pull_request_hold_service.stop()
        await asyncio.to_thread(self.message_store.shutdown)
        await asyncio.to_thread(self.consumer_offset_manager.persist)

    async def _persist_offsets_loop(self) -> None:
        interval_s = self.broker_config.flush_consumer_offset_interval / 1000
        while True:
            await asyncio.sleep(interval_s)
            try:
                await asyncio.to_thread(self.consumer_offset_manager.persist)
            except Exception:
                log.exception("persist consumer offsets failed")

    async def __aenter__(self) -> BrokerController:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
