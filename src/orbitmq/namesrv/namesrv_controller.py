"""``NamesrvController``: the name server's wiring (RocketMQ's ``NamesrvController``): the
route and KV managers, the one table of request codes, the housekeeping listener and the
scan that drops silent brokers."""

from __future__ import annotations

import asyncio
import logging

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.common.lifetime import AsyncLifetime
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.common.socket_address import is_wildcard
from orbitmq.namesrv.broker_housekeeping_service import BrokerHousekeepingService
from orbitmq.namesrv.broker_registration_processor import BrokerRegistrationProcessor
from orbitmq.namesrv.kv_config_manager import KVConfigManager
from orbitmq.namesrv.kv_config_processor import KVConfigProcessor
from orbitmq.namesrv.namesrv_config import NamesrvConfig
from orbitmq.namesrv.namesrv_config_processor import NamesrvConfigProcessor
from orbitmq.namesrv.namesrv_metrics import NamesrvMetrics
from orbitmq.namesrv.route_info_manager import RouteInfoManager
from orbitmq.namesrv.route_query_processor import RouteQueryProcessor
from orbitmq.protocol import RequestCode
from orbitmq.remoting import RemotingServer, RequestProcessor, TlsSystemConfig

log = logging.getLogger(__name__)


class NamesrvController(AsyncLifetime):
    """Owns one name server: its ``RouteInfoManager``, ``KVConfigManager``, processors,
    ``RemotingServer`` and the expiry scan task. Name servers share nothing: each
    controller is independent, and several may run in one process.

    ``start`` loads the KV table, registers every code (see ``registrations``), starts
    listening, serving metrics (``NamesrvMetrics``) and scanning; ``stop`` undoes it. Use
    from one event loop.
    """

    def __init__(
        self,
        config: NamesrvConfig | None = None,
        clock: Clock = SYSTEM_CLOCK,
        *,
        fs: FileSystem = OS_FILE_SYSTEM,
        tls: TlsSystemConfig | None = None,
    ) -> None:
        """``tls``: the tls.* settings of the listening port (None: plain only)."""
        self.config = config or NamesrvConfig()
        self.route_info_manager = RouteInfoManager(clock)
        self.kv_config_manager = KVConfigManager(self.config.kv_config_path or None, fs=fs)
        self._build_processors()
        self.remoting_server = RemotingServer(
            self.config.bind_address,
            self.config.listen_port,
            channel_max_idle_s=float(self.config.server_channel_max_idle_time_seconds),
            tls=tls,
        )
        self.registrations = self._registration_table()
        for code, processor in self.registrations:
            self.remoting_server.table.register_processor(code, processor)
        self.remoting_server.add_listener(BrokerHousekeepingService(self.route_info_manager))
        self.metrics = NamesrvMetrics(self.config, self.route_info_manager)
        self.remoting_server.table.rpc_latency = self.metrics.rpc_latency
        self._scan_task: asyncio.Task[None] | None = None

    def _build_processors(self) -> None:
        """One processor per family of request codes, over the two managers."""
        self.broker_registration_processor = BrokerRegistrationProcessor(
            self.route_info_manager, self.kv_config_manager
        )
        self.route_query_processor = RouteQueryProcessor(
            self.route_info_manager, self.kv_config_manager, self.config.order_message_enable
        )
        self.kv_config_processor = KVConfigProcessor(self.kv_config_manager)
        self.namesrv_config_processor = NamesrvConfigProcessor(self.config)

    def _registration_table(self) -> list[tuple[int, RequestProcessor]]:
        """The routing table, in one place (RocketMQ routes all of these to its
        DefaultRequestProcessor; here each group has its own processor). Every code runs
        on the remoting server's public executor."""
        registration = self.broker_registration_processor
        routes, kv_config = self.route_query_processor, self.kv_config_processor
        config = self.namesrv_config_processor
        return [
            (RequestCode.REGISTER_BROKER, registration),
            (RequestCode.UNREGISTER_BROKER, registration),
            (RequestCode.QUERY_DATA_VERSION, registration),
            (RequestCode.GET_ROUTEINFO_BY_TOPIC, routes),
            (RequestCode.GET_BROKER_CLUSTER_INFO, routes),
            (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, routes),
            (RequestCode.GET_TOPICS_BY_CLUSTER, routes),
            (RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS, routes),
            (RequestCode.GET_UNIT_TOPIC_LIST, routes),
            (RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST, routes),
            (RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST, routes),
            (RequestCode.DELETE_TOPIC_IN_NAMESRV, routes),
            (RequestCode.WIPE_WRITE_PERM_OF_BROKER, routes),
            (RequestCode.ADD_WRITE_PERM_OF_BROKER, routes),
            (RequestCode.PUT_KV_CONFIG, kv_config),
            (RequestCode.GET_KV_CONFIG, kv_config),
            (RequestCode.DELETE_KV_CONFIG, kv_config),
            (RequestCode.GET_KVLIST_BY_NAMESPACE, kv_config),
            (RequestCode.UPDATE_NAMESRV_CONFIG, config),
            (RequestCode.GET_NAMESRV_CONFIG, config),
        ]

    @property
    def port(self) -> int:
        """The bound port, once started."""
        return self.remoting_server.port

    @property
    def address(self) -> str:
        host = self.config.bind_address
        return f"{'127.0.0.1' if is_wildcard(host) else host}:{self.port}"

    async def start(self) -> None:
        self.kv_config_manager.load()
        await self.remoting_server.start()
        try:
            self.metrics.start(self.address)
        except BaseException:
            await self.remoting_server.stop()
            raise
        if self._scan_task is None:
            self._scan_task = asyncio.create_task(self._scan_loop(), name="scanNotActiveBroker")
        log.info("name server started on %s", self.address)

    async def _stop(self) -> None:
        await self.stop()

    async def stop(self) -> None:
        task, self._scan_task = self._scan_task, None
        await cancel_and_wait(task)
        await self.metrics.stop()
        await self.remoting_server.stop()

    def scan_not_active_broker(self) -> int:
        """One expiry pass: drop silent brokers and close their connections; how many."""
        expired = self.route_info_manager.scan_not_active_broker()
        for live in expired:
            if live.channel is not None:
                live.channel.close()
        return len(expired)

    async def _scan_loop(self) -> None:
        interval_s = self.config.scan_not_active_broker_interval_ms / 1000
        await run_every(interval_s, self.scan_not_active_broker, "scanNotActiveBroker")
