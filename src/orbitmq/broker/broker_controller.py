"""``BrokerController``: the broker's wiring (RocketMQ's ``BrokerController``): the store,
the metadata managers, the processors, the one table of request codes and the periodic
tasks and the name-server registration."""

from __future__ import annotations

import asyncio
import logging

from orbitmq.broker.admin_acl_processor import AdminAclProcessor
from orbitmq.broker.admin_broker_processor import AdminBrokerProcessor
from orbitmq.broker.admin_group_processor import AdminGroupProcessor
from orbitmq.broker.admin_runtime_processor import AdminRuntimeProcessor
from orbitmq.broker.admin_stats_processor import AdminStatsProcessor
from orbitmq.broker.broker_acl import BrokerAcl
from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.broker_configuration import BrokerConfiguration
from orbitmq.broker.broker_outer_api import BrokerIdentity, BrokerOuterAPI, RegisterBrokerResult
from orbitmq.broker.broker_runtime_info import BrokerRuntimeInfo
from orbitmq.broker.broker_stats_manager import BrokerStatsManager
from orbitmq.broker.client_housekeeping import ClientHousekeeping
from orbitmq.broker.client_manage_processor import ClientManageProcessor
from orbitmq.broker.consumer_filter_manager import ConsumerFilterManager
from orbitmq.broker.consumer_manage_processor import ConsumerManageProcessor
from orbitmq.broker.consumer_manager import ConsumerIdsChangeNotifier, ConsumerManager
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.end_transaction_processor import EndTransactionProcessor
from orbitmq.broker.fast_remoting_server import FastRemotingServer
from orbitmq.broker.master_address import MasterAddress
from orbitmq.broker.metrics import BrokerMetricsManager
from orbitmq.broker.namesrv_registration_service import (
    NamesrvRegistrationService,
    registration_period_s,
)
from orbitmq.broker.pop_components import PopComponents
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.broker.pull_message_processor import PullMessageProcessor, SubscriptionLookup
from orbitmq.broker.query_message_processor import QueryMessageProcessor
from orbitmq.broker.rebalance_lock_manager import RebalanceLockManager
from orbitmq.broker.recall_message_processor import RecallMessageProcessor
from orbitmq.broker.replication import Replication
from orbitmq.broker.schedule_message_service import ScheduleMessageService
from orbitmq.broker.send_message_back_processor import SendMessageBackProcessor
from orbitmq.broker.send_message_processor import SendMessageProcessor
from orbitmq.broker.slave_synchronize import SlaveSynchronize
from orbitmq.broker.store_stats_service import StoreStatsService
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.broker.transactional_message_check_service import TransactionalMessageCheckService
from orbitmq.broker.transactional_message_service import TransactionalMessageService
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.config_file import ConfigFile
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.common.lifetime import AsyncLifetime
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.common.socket_address import advertised_host
from orbitmq.common.topic import RMQ_SYS_WHEEL_TIMER_TOPIC
from orbitmq.remoting import (
    DEFAULT_CAPACITY,
    RemotingServer,
    RequestExecutor,
    RequestProcessor,
    TlsSystemConfig,
)
from orbitmq.store import BrokerRole, MessageStore, MessageStoreConfig, TimerMessageStore

log = logging.getLogger(__name__)


class BrokerController(AsyncLifetime):
    """Owns one broker: its ``MessageStore``, ``TopicConfigManager``,
    ``SubscriptionGroupManager``, ``ConsumerOffsetManager``, ``ScheduleMessageService``,
    ``TransactionalMessageCheckService``, processors, ``RemotingServer``, the
    consumer-offset persist task and the name-server registration. It listens on two ports:
    ``listen_port`` and the VIP channel (``FastRemotingServer``, listenPort - 2).

    ``start`` loads the metadata and the store (recovery), starts the store and the
    long-polling service, listens, then registers with the name servers; ``stop``
    unregisters, undoes the rest and saves the offsets. The store host written into every
    message (and its offset message id) is ``broker_ip1`` and the bound port: the port is
    bound before anything else, then the store directory is locked (``StoreLockedError``
    when another process holds it), loaded and served. Use from one event loop.
    """

    def __init__(
        self,
        broker_config: BrokerConfig,
        store_config: MessageStoreConfig,
        *,
        clock: Clock = SYSTEM_CLOCK,
        fs: FileSystem = OS_FILE_SYSTEM,
        find_subscription: SubscriptionLookup | None = None,
        config_path: str | None = None,
        tls: TlsSystemConfig | None = None,
    ) -> None:
        """``config_path`` is the broker.conf the broker was started with (``-c``), where
        UPDATE_BROKER_CONFIG saves its changes; None: changes are not saved. ``tls``: the
        tls.* settings of both ports and of the broker's own connections (None: plain)."""
        self.broker_config, self.store_config, self.tls = broker_config, store_config, tls
        self.configuration = BrokerConfiguration(
            broker_config, store_config, config_path, clock=clock
        )
        if not broker_config.broker_ip1:
            broker_config.broker_ip1 = advertised_host(broker_config.bind_address)
        self._build_managers(clock, fs)
        self._build_clients(clock)
        self._build_delivery(clock, fs)
        self._build_replication(fs)
        self._build_processors(find_subscription)
        self.pop = PopComponents(self, clock, fs)
        host, port = broker_config.bind_address, broker_config.listen_port
        idle_s = float(broker_config.server_channel_max_idle_time_seconds)
        self.remoting_server = RemotingServer(host, port, channel_max_idle_s=idle_s, tls=tls)
        self.registrations = self._registration_table()
        for code, processor, executor in self.registrations:
            self.remoting_server.table.register_processor(code, processor, executor)
        # RocketMQ's second port: its clients' VIP channel and its slaves' topic sync.
        self.fast_remoting_server = FastRemotingServer(host, port, self.registrations, idle_s, tls)
        self.acl.install(self.remoting_server.table, self.fast_remoting_server.table)
        # Closed, failed or idle connections lose their producer and consumer registrations.
        self.remoting_server.add_listener(self.client_housekeeping)
        self.fast_remoting_server.add_listener(self.client_housekeeping)
        self._build_metrics(clock)
        self._persist_task: asyncio.Task[None] | None = None

    def _build_metrics(self, clock: Clock) -> None:
        """The metrics manager and its hot-path counters (None: metrics are off)."""
        self.metrics_manager = BrokerMetricsManager(
            self.broker_config,
            self.topic_config_manager,
            self.subscription_group_manager,
            self.consumer_manager,
            self.producer_manager,
            self.consumer_offset_manager,
            self.message_store,
            clock,
        )
        self.send_message_processor.message_counters = self.metrics_manager.counters
        self.pull_message_processor.message_counters = self.metrics_manager.counters
        self.remoting_server.table.rpc_latency = self.metrics_manager.rpc_latency

    def _build_managers(self, clock: Clock, fs: FileSystem) -> None:
        """The store and the managers of persisted metadata (RocketMQ's ``BrokerController``
        constructor, split in the four ``_build_*`` steps ``__init__`` runs in order)."""
        broker_config, store_config = self.broker_config, self.store_config
        self.topic_config_manager = TopicConfigManager(
            broker_config,
            store_config.config_file("topics"),
            clock=clock,
            fs=fs,
            # Late-bound: the registration service is made below.
            on_new_topic=lambda tc: self.registration_service.on_new_topic(tc),  # noqa: PLW0108
        )
        self.subscription_group_manager = SubscriptionGroupManager(
            broker_config, store_config.config_file("subscriptionGroup"), clock=clock, fs=fs
        )
        self.consumer_offset_manager = ConsumerOffsetManager(
            store_config.config_file("consumerOffset"), fs=fs
        )
        self.message_store = MessageStore(
            store_config,
            store_host=(broker_config.broker_ip1, broker_config.listen_port),
            clock=clock,
            fs=fs,
            message_arriving_listener=self._message_arriving,
        )

    def _build_delivery(self, clock: Clock, fs: FileSystem) -> None:
        """What puts into the store for a master: delay, timers, transactions, checks."""
        broker_config, store_config = self.broker_config, self.store_config
        # A slave takes no writes: only a master delivers delayed messages.
        self.schedule_message_service: ScheduleMessageService | None = None
        if store_config.broker_role is not BrokerRole.SLAVE:
            self.schedule_message_service = ScheduleMessageService(
                self.message_store,
                self.message_store.delay_levels_ms,
                store_config.config_file("delayOffset"),
                clock=clock,
                fs=fs,
                persist_interval_ms=store_config.flush_delay_offset_interval,
            )
        # Timer messages (RocketMQ 5): filed and delivered by a master only, as delay levels.
        self.timer_message_store: TimerMessageStore | None = None
        if store_config.broker_role is not BrokerRole.SLAVE and store_config.timer_wheel_enable:
            self.timer_message_store = TimerMessageStore(
                self.message_store, store_config, clock=clock, fs=fs
            )
        self.transactional_message_service = TransactionalMessageService(self.message_store)
        # As delivery: only a master asks producers about halves and stores their outcome.
        self.transactional_message_check_service: TransactionalMessageCheckService | None = None
        if store_config.broker_role is not BrokerRole.SLAVE:
            self.transactional_message_check_service = TransactionalMessageCheckService(
                self.message_store,
                self.transactional_message_service,
                self.producer_manager,
                self.topic_config_manager,
                broker_config,
                clock=clock,
            )

    def _build_clients(self, clock: Clock) -> None:
        """The registries of connected clients, queue locks and the traffic counters."""
        broker_config = self.broker_config
        # The client registry (heartbeats); consumers hear of their group's changes.
        self.consumer_manager = ConsumerManager(
            ConsumerIdsChangeNotifier(lambda: broker_config.notify_consumer_ids_changed_enable),
            clock=clock,
        )
        self.producer_manager = ProducerManager(clock=clock)
        self.client_housekeeping = ClientHousekeeping(self.consumer_manager, self.producer_manager)
        self.rebalance_lock_manager = RebalanceLockManager(clock=clock)
        # Traffic counters: fed by the send, pull and send-back paths, read by admin requests.
        self.broker_stats_manager = BrokerStatsManager(
            broker_config.broker_cluster_name, clock=clock
        )
        self.store_stats_service = StoreStatsService(self.broker_stats_manager, clock=clock)

    def _build_replication(self, fs: FileSystem) -> None:
        """Replication and the name-server registration that tells a slave its master."""
        broker_config, store_config = self.broker_config, self.store_config
        # A slave's master: from each registration's answer; read by metadata sync and HA.
        self.master_address = MasterAddress()
        self._delay_offset_file = ConfigFile(store_config.config_file("delayOffset"), fs)
        self.slave_synchronize: SlaveSynchronize | None = None
        if store_config.broker_role is BrokerRole.SLAVE:
            self.slave_synchronize = SlaveSynchronize(
                self.master_address,
                lambda: self.address,
                self.topic_config_manager,
                self.consumer_offset_manager,
                self.subscription_group_manager,
                self._delay_offset_file,
                outer_api=BrokerOuterAPI(tls=self.tls),
            )
        self.replication = Replication(broker_config, self.message_store)
        # Name-server registration: at start, every period, when a send creates a topic.
        self.registration_service = NamesrvRegistrationService(
            BrokerOuterAPI(tls=self.tls),
            broker_config.namesrv_addresses,
            lambda: BrokerIdentity(
                broker_config.broker_cluster_name,
                broker_config.broker_name,
                broker_config.broker_id,
                self.address,
                self.replication.ha_server_addr,
            ),
            self.topic_config_manager.build_topic_config_serialize_wrapper,
            period_s=registration_period_s(broker_config.register_name_server_period),
            timeout_s=broker_config.register_broker_timeout_mills / 1000,
            order_topics=self.topic_config_manager.update_order_topic_config,
            on_registered=self._on_registered,
        )

    def _on_registered(self, results: list[RegisterBrokerResult]) -> None:
        """After each registration round: the master's addresses, for sync and HA."""
        self.master_address.on_registered(results)
        self.replication.follow(self.master_address.ha_server_addr)

    def _build_processors(self, find_subscription: SubscriptionLookup | None) -> None:
        """One processor per family of request codes, over the managers."""
        broker_config, store_config, store = (
            self.broker_config,
            self.store_config,
            self.message_store,
        )
        # The SQL92 filters consumers' heartbeats declare, read by their pulls.
        self.consumer_filter_manager = ConsumerFilterManager()
        stats = (self.broker_stats_manager, self.store_stats_service)
        self.client_manage_processor = ClientManageProcessor(
            broker_config,
            self.topic_config_manager,
            self.subscription_group_manager,
            self.consumer_manager,
            self.producer_manager,
            self.consumer_filter_manager,
        )
        self.consumer_manage_processor = ConsumerManageProcessor(
            self.consumer_manager, self.consumer_offset_manager, store
        )
        self.send_message_processor = SendMessageProcessor(
            broker_config,
            store_config,
            store,
            self.topic_config_manager,
            self.subscription_group_manager,
            self.transactional_message_service,
            stats=stats,
        )
        self.end_transaction_processor = EndTransactionProcessor(
            store, self.transactional_message_service
        )
        self.pull_message_processor = PullMessageProcessor(
            broker_config,
            store_config,
            store,
            self.topic_config_manager,
            self.subscription_group_manager,
            self.consumer_offset_manager,
            find_subscription or self.consumer_manager.find_subscription_data,
            self.consumer_filter_manager,
            self.consumer_manager,
            stats=stats,
        )
        self.pull_request_hold_service = self.pull_message_processor.pull_request_hold_service
        self.send_message_back_processor = SendMessageBackProcessor(
            broker_config,
            store,
            self.topic_config_manager,
            self.subscription_group_manager,
            stats=self.broker_stats_manager,
        )
        self.query_message_processor = QueryMessageProcessor(store_config, store)
        self.recall_message_processor = RecallMessageProcessor.of(self)
        self._build_admin_processors()

    def _build_admin_processors(self) -> None:
        """The admin requests' processors."""
        broker_config, store = self.broker_config, self.message_store
        store_config = self.store_config
        # Admin requests, orderly-consumption queue locks (RocketMQ's AdminBrokerProcessor).
        self.admin_broker_processor = AdminBrokerProcessor(
            store,
            self.topic_config_manager,
            self.consumer_offset_manager,
            self.rebalance_lock_manager,
            broker_role=store_config.broker_role,
            # Late-bound, as on_new_topic: re-register with the name servers at once.
            on_topic_changed=lambda tc: self.registration_service.on_new_topic(tc),  # noqa: PLW0108
            subscription_group_manager=self.subscription_group_manager,
            delay_offsets=self._delay_offsets,
        )
        self.admin_stats_processor = AdminStatsProcessor(
            broker_config.broker_name,
            store,
            self.topic_config_manager,
            self.consumer_offset_manager,
            self.consumer_manager,
            self.subscription_group_manager,
        )
        self.admin_group_processor = AdminGroupProcessor(
            broker_config.broker_name,
            store,
            self.subscription_group_manager,
            self.consumer_manager,
            self.producer_manager,
            self.consumer_offset_manager,
            broker_role=store_config.broker_role,
        )
        self._build_admin_runtime_processor()
        self.acl = BrokerAcl(broker_config, lambda: self.address)

    def _build_admin_runtime_processor(self) -> None:
        """Config, runtime info, stats and consume-queue requests. The executors are
        filled in with the routing table (the runtime info reports their queues)."""
        self.executors: dict[str, RequestExecutor] = {}
        runtime_info = BrokerRuntimeInfo(
            self.broker_config,
            self.message_store,
            self.store_stats_service,
            self.executors,
            schedule_offsets=self._schedule_offsets,
        )
        self.admin_runtime_processor = AdminRuntimeProcessor(
            self.configuration,
            runtime_info,
            self.broker_stats_manager,
            self.message_store,
            (
                self.topic_config_manager,
                self.subscription_group_manager,
                self.consumer_offset_manager,
                self.consumer_manager,
            ),
            self.consumer_filter_manager,
            lambda: self.address,
            # Late-bound, as on_topic_changed: register again at once.
            on_permission_changed=lambda: self.registration_service.request_registration(),  # noqa: PLW0108
        )

    def _registration_table(self) -> list[tuple[int, RequestProcessor, RequestExecutor]]:
        """The routing table, in one place (RocketMQ's registerProcessor): each code with
        its processor and the executor (RocketMQ's thread pool) that bounds it."""
        config = self.broker_config
        send = RequestExecutor(
            "SendMessageExecutor",
            config.send_thread_pool_queue_capacity,
            max_wait_ms=lambda: config.fast_failure_wait_ms(config.wait_time_mills_in_send_queue),
        )
        pull = RequestExecutor(
            "PullMessageExecutor",
            config.pull_thread_pool_queue_capacity,
            max_wait_ms=lambda: config.fast_failure_wait_ms(config.wait_time_mills_in_pull_queue),
        )
        query = RequestExecutor("QueryMessageExecutor", config.query_thread_pool_queue_capacity)
        # RocketMQ gives heartbeats and consumer management their own pools.
        heartbeat = RequestExecutor(
            "HeartbeatExecutor", config.heartbeat_thread_pool_queue_capacity
        )
        # consumerManagerThreadPoolQueueCapacity is not a BrokerConfig key yet.
        consumer = RequestExecutor("ConsumerManageExecutor", DEFAULT_CAPACITY)
        admin = RequestExecutor("AdminBrokerExecutor", DEFAULT_CAPACITY)
        self.executors.update(send=send, pull=pull, query=query)
        # Each processor answers the codes of its group in protocol.processor_codes.
        served: list[tuple[RequestProcessor, frozenset[int], RequestExecutor]] = [
            (self.send_message_processor, SendMessageProcessor.REQUEST_CODES, send),
            (self.send_message_back_processor, SendMessageBackProcessor.REQUEST_CODES, send),
            (self.end_transaction_processor, EndTransactionProcessor.REQUEST_CODES, send),
            (self.recall_message_processor, RecallMessageProcessor.REQUEST_CODES, send),
            (self.query_message_processor, QueryMessageProcessor.REQUEST_CODES, query),
            (self.pull_message_processor, PullMessageProcessor.REQUEST_CODES, pull),
            (self.client_manage_processor, ClientManageProcessor.REQUEST_CODES, heartbeat),
            (self.consumer_manage_processor, ConsumerManageProcessor.REQUEST_CODES, consumer),
            (self.admin_broker_processor, AdminBrokerProcessor.REQUEST_CODES, admin),
            (self.admin_stats_processor, AdminStatsProcessor.REQUEST_CODES, admin),
            (self.admin_group_processor, AdminGroupProcessor.REQUEST_CODES, admin),
            (self.admin_runtime_processor, AdminRuntimeProcessor.REQUEST_CODES, admin),
            *self.pull_message_processor.cold_data.served(admin),
            (self.acl.admin_processor, AdminAclProcessor.REQUEST_CODES, admin),
            *self.pop.served(pull),
        ]
        return [
            (code, processor, executor)
            for processor, codes, executor in served
            for code in sorted(codes)
        ]

    def _schedule_offsets(self) -> dict[int, int]:
        """Each delay level's delivery offset, 0 before the first (none on a slave)."""
        service = self.schedule_message_service
        if service is None:
            return {}
        levels = range(1, len(self.message_store.delay_levels_ms) + 1)
        return {level: service.offset_table.get(level, 0) for level in levels}

    def _delay_offsets(self) -> bytes:
        """delayOffset.json's content: a master's live offsets, a slave's last copy."""
        if self.schedule_message_service is not None:
            return self.schedule_message_service.encode()
        path = self._delay_offset_file.path
        return path.read_bytes() if path.exists() else b'{"offsetTable":{}}'

    def _message_arriving(
        self, topic: str, queue_id: int, max_offset: int, tags_codes: frozenset[int]
    ) -> None:
        # Called from the store: its reput thread, or the loop after a small put.
        if topic == RMQ_SYS_WHEEL_TIMER_TOPIC and self.timer_message_store is not None:
            self.timer_message_store.wakeup()  # file it now: its time may be near
        self.pull_request_hold_service.message_arriving(topic, queue_id, max_offset, tags_codes)
        self.pop.message_arriving(topic, queue_id)

    @property
    def port(self) -> int:
        """The bound port, once started."""
        return self.remoting_server.port

    @property
    def fast_port(self) -> int:
        """The VIP channel's bound port (listenPort - 2; any free one with 0), once started."""
        return self.fast_remoting_server.port

    @property
    def address(self) -> str:
        return f"{self.broker_config.broker_ip1}:{self.port}"

    async def bind(self) -> None:
        """Both ports, not accepting yet: a busy one fails (OSError) and neither is held."""
        await self.remoting_server.bind()
        try:
            await self.fast_remoting_server.bind()
        except BaseException:
            await self.remoting_server.stop()
            raise

    async def unbind(self) -> None:
        """Give both ports back (after ``bind``, when ``start`` is not to follow)."""
        await self.fast_remoting_server.stop()
        await self.remoting_server.stop()

    async def start(self) -> None:
        # The ports first: a busy port fails before the store is touched. Connections are
        # refused until everything is loaded (``bind`` does not accept yet).
        await self.bind()
        # The store host written into messages and their offset msgIds carries the bound
        # port (known only now with listen_port 0).
        self.message_store.commit_log.set_store_host((self.broker_config.broker_ip1, self.port))
        try:
            # One process per store: nothing is read before the lock is held.
            self.message_store.lock.acquire()
            await self._load()
            await self.pop.load()
            self.message_store.start()
            await asyncio.to_thread(self.replication.start)
            if self.schedule_message_service is not None:
                self.schedule_message_service.start()
            if self.timer_message_store is not None:
                self.timer_message_store.start()
            await self.pull_message_processor.start()
            await self.pop.start()
            await self.client_housekeeping.start()
            await self.acl.start()
            await self.remoting_server.start()
            await self.fast_remoting_server.start()
            if self.transactional_message_check_service is not None:
                await self.transactional_message_check_service.start()
            self.metrics_manager.start()
        except BaseException:
            await self.acl.stop()
            await self.metrics_manager.stop()
            await self._stop_transactional_message_check_service()
            await self.unbind()
            await self.client_housekeeping.stop()
            await self.pull_message_processor.stop()
            await self.pop.stop()
            await asyncio.to_thread(self._stop_schedule_message_service)
            await asyncio.to_thread(self.replication.shutdown)
            # A started store stops as a clean shutdown does (no abort file); a store that
            # never started only gives its lock back.
            await asyncio.to_thread(self.message_store.shutdown)
            raise
        await self.broker_stats_manager.start()
        await self.store_stats_service.start()
        if self._persist_task is None:
            self._persist_task = asyncio.create_task(
                self._persist_offsets_loop(), name="persistConsumerOffset"
            )
        await self.registration_service.start()
        if self.slave_synchronize is not None:
            await self.slave_synchronize.start()
        log.info("broker %s started on %s", self.broker_config.broker_name, self.address)

    async def _load(self) -> None:
        """The metadata tables and the store (recovery), as RocketMQ's ``initialize``."""
        self.topic_config_manager.load()
        self.subscription_group_manager.load()
        self.consumer_offset_manager.load()
        report = await asyncio.to_thread(self.message_store.load)
        if self.schedule_message_service is not None:
            await asyncio.to_thread(self.schedule_message_service.load)
        if self.timer_message_store is not None:
            await asyncio.to_thread(self.timer_message_store.load)
        await asyncio.to_thread(self.transactional_message_service.load)
        if report.abnormal:
            # Operators must learn of a crash from the broker itself, not from missing data.
            log.warning(
                "abnormal recovery: the last run did not shut down cleanly; %d records checked "
                "from commit log offset %d, log ends at %d, %d bytes truncated%s",
                report.records_checked,
                report.scan_from_offset,
                report.valid_offset,
                report.truncated_bytes,
                f" ({report.problem})" if report.problem else "",
            )
        else:
            log.info("store loaded: %s", report)

    async def _stop(self) -> None:
        await self.stop()

    async def stop(self) -> None:
        if self.slave_synchronize is not None:
            await self.slave_synchronize.stop()
        await self.registration_service.stop()
        task, self._persist_task = self._persist_task, None
        await cancel_and_wait(task)
        await self.metrics_manager.stop()
        await self.broker_stats_manager.stop()
        await self.store_stats_service.stop()
        await self.unbind()
        await self.acl.stop()
        await self.send_message_processor.send_queue.close()
        await self.client_housekeeping.stop()
        await self.pull_message_processor.stop()
        await self.pop.stop()  # revives put into the store, as checks do
        # Checks put into the store, as delivery does: they end before it.
        await self._stop_transactional_message_check_service()
        # Delivery puts into the store and writes delayOffset.json: it ends first.
        await asyncio.to_thread(self._stop_schedule_message_service)
        # Offsets first: the store's shutdown gives the directory's lock back, and every
        # write into the directory must happen while it is held.
        await asyncio.to_thread(self.consumer_offset_manager.persist)
        await asyncio.to_thread(self.replication.shutdown)
        await asyncio.to_thread(self.message_store.shutdown)

    async def _stop_transactional_message_check_service(self) -> None:
        if self.transactional_message_check_service is not None:
            await self.transactional_message_check_service.stop()

    def _stop_schedule_message_service(self) -> None:
        """Delay levels and timers: both put into the store and persist their progress."""
        if self.schedule_message_service is not None:
            self.schedule_message_service.shutdown()
        if self.timer_message_store is not None:
            self.timer_message_store.shutdown()

    async def _persist_offsets_loop(self) -> None:
        await run_every(
            self.broker_config.flush_consumer_offset_interval / 1000,
            lambda: asyncio.to_thread(self.consumer_offset_manager.persist),
            "persist consumer offsets",
        )
