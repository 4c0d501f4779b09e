"""The broker's settings and how broker.conf becomes them.

Field names are RocketMQ's ``BrokerConfig`` / ``NettyServerConfig`` keys in snake_case
(``brokerClusterName`` is ``broker_cluster_name``), with RocketMQ 4.9's defaults. A
broker.conf may hold these keys and every ``MessageStoreConfig`` key; both are read here and
nowhere else.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path

from orbitmq.common.config_binding import bind_properties, snake_case
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties
from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.common.topic import RMQ_SYS_TRACE_TOPIC
from orbitmq.protocol import DEFAULT_BROKER_PORT
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.remoting import DEFAULT_PROM_EXPORTER_PORT, TLS_KEYS
from orbitmq.store import MAX_FRAME_BODY_SIZE, BrokerRole, MessageStoreConfig

log = logging.getLogger(__name__)

#: RocketMQ's environment variable for the name server list (``NAMESRV_ADDR``).
NAMESRV_ADDR_ENV = "NAMESRV_ADDR"


@dataclass(slots=True)
class BrokerConfig:
    """Broker settings (RocketMQ's BrokerConfig and the server half of NettyServerConfig)."""

    broker_cluster_name: str = "DefaultCluster"
    broker_name: str = field(default_factory=socket.gethostname)
    broker_id: int = 0
    #: Name servers, "host:port;host:port".
    namesrv_addr: str | None = None
    #: The host written into messages and registered with name servers; empty: the bind
    #: address, or this host's address when listening on every interface (RocketMQ: the
    #: local address). Filled in by the BrokerController.
    broker_ip1: str = ""
    #: The host of the HA address registered with name servers (haServerAddr, with
    #: haListenPort); empty: ``broker_ip1``.
    broker_ip2: str = ""
    #: The address to listen on (RocketMQ 5's bindAddress): every interface by default.
    bind_address: str = "0.0.0.0"
    listen_port: int = DEFAULT_BROKER_PORT
    broker_permission: int = PERM_READ | PERM_WRITE
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    #: RocketMQ 5 proxy's switch: a send whose message type (normal, FIFO, delay,
    #: transaction) is not the one its topic's ``message.type`` attribute accepts is
    #: refused. Over remoting only topics that declare the attribute are checked (RocketMQ
    #: 5's broker checks none; its proxy checks all): 4.x clients keep working on topics
    #: made without it. Over gRPC every topic is checked, unset meaning NORMAL.
    enable_topic_message_type_check: bool = True
    #: RocketMQ 5's switch: whether an admin may create a topic of ``message.type=MIXED``.
    enable_mixed_message_type: bool = False
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    flush_consumer_offset_interval: int = 5000
    send_thread_pool_queue_capacity: int = 10_000
    pull_thread_pool_queue_capacity: int = 100_000
    query_thread_pool_queue_capacity: int = 20_000
    heartbeat_thread_pool_queue_capacity: int = 50_000
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    #: RocketMQ 5's cold data flow control (coldDataFlowControlEnable, a store key, turns
    #: it on): a group whose pulls read this many bytes of cold data within the 5 s window
    #: (or all groups' reads together, globalColdReadThreshold) is controlled. With
    #: coldCtrStrategyEnable a group over its threshold gets 1.5x of it for a while (the
    #: PID strategy, usePIDColdCtrStrategy, or the simple one).
    cold_ctr_strategy_enable: bool = False
    use_pid_cold_ctr_strategy: bool = True
    cg_cold_read_threshold: int = 3 * 1024 * 1024
    global_cold_read_threshold: int = 100 * 1024 * 1024
    notify_consumer_ids_changed_enable: bool = True
    register_broker_timeout_mills: int = 6000
    register_name_server_period: int = 30_000
    transaction_time_out: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int = 60_000
    reject_transaction_message: bool = False
    #: RocketMQ 5.3's RECALL_MESSAGE (a producer cancels a delay message before its time):
    #: off by default, as in RocketMQ; a recall is then answered NO_PERMISSION.
    recall_message_enable: bool = False
    #: SQL92 subscriptions are served (docs/design/filters.md); off, they are refused.
    enable_property_filter: bool = False
    #: A group's retry topic is filtered by the group's SQL92 filters of the original
    #: topics (RocketMQ's ExpressionForRetryMessageFilter).
    filter_support_retry: bool = False
    slave_read_enable: bool = False
    broker_fast_failure_enable: bool = True
    wait_time_mills_in_send_queue: int = 200
    wait_time_mills_in_pull_queue: int = 5000
    server_channel_max_idle_time_seconds: int = 120
    #: RocketMQ 4.x plain ACL: every request is checked against
    #: ``<rocketmqHome>/<aclPlainFile>`` and ``<rocketmqHome>/conf/acl/**/*.yml``.
    acl_enable: bool = False
    #: The default ACL file under rocketmqHome (RocketMQ: -Drocketmq.acl.plain.file).
    acl_plain_file: str = "conf/plain_acl.yml"
    #: Metrics, under RocketMQ 5's keys: PROM serves Prometheus text at ``/metrics`` on
    #: metricsPromExporterHost (empty: brokerIP1) and metricsPromExporterPort (0: any free
    #: port); metricsLabel adds "k1:v1,k2:v2" labels to every family.
    metrics_exporter_type: MetricsExporterType = MetricsExporterType.DISABLE
    metrics_prom_exporter_host: str = ""
    metrics_prom_exporter_port: int = DEFAULT_PROM_EXPORTER_PORT
    metrics_label: str = ""
    #: rocketmq_rpc_latency (every answered request's latency); off, a send costs about
    #: half as much in metrics (docs/benchmarks.md, "Metrics cost").
    enable_remoting_metrics: bool = True

    #: RocketMQ's installation directory (empty: ROCKETMQ_HOME): where the plain ACL files
    #: are (aclEnable); nothing else is read from it.
    rocketmq_home: str = ""
    #: Keys UPDATE_BROKER_CONFIG may not change, ';'-separated (RocketMQ's default);
    #: brokerConfigPath, rocketmqHome and configBlackList are refused whatever it says.
    config_black_list: str = "configBlackList;brokerConfigPath"

    #: Message trace (R41): the broker creates the trace topic ``msg_trace_topic_name`` at
    #: start (one queue, read and write), where clients with trace on send their records.
    trace_topic_enable: bool = False
    msg_trace_topic_name: str = RMQ_SYS_TRACE_TOPIC

    #: The web console ``orbitmq start`` serves beside the broker (not a RocketMQ key: its
    #: dashboard is a separate application): its port, 0 any free port, -1 none.
    console_port: int = 8080
    #: Serve the console over HTTPS with this certificate chain and key (PEM; the key's
    #: password if it has one); empty: plain HTTP.
    console_cert_path: str = ""
    console_key_path: str = ""
    console_key_password: str = ""
    #: The console asks for a login with an ACL account (access key and secret key) and
    #: reads as that account; ``orbitmq start`` turns it on with aclEnable=true unless the
    #: file sets it. A login idle for consoleSessionTimeoutMinutes ends.
    console_acl_enable: bool = False
    console_session_timeout_minutes: int = 30

    #: The RocketMQ 5 gRPC endpoint (apache.rocketmq.v2.MessagingService) the broker process
    #: serves itself, on bindAddress (RocketMQ's proxy key and default port, 8081); 0 any
    #: free port, -1 none. Served by ``orbitmq start`` and ``orbitmq broker`` (grpc extra).
    grpc_server_port: int = 8081

    #: RocketMQ 5's POP (docs/design/pop.md): the revive log's queues (check points and
    #: acks of rmq_sys_REVIVE_LOG_<cluster>), how often (ms) the revive service runs, the
    #: POP requests held per queue and in all, and how often (%) a POP reads the group's
    #: retry topic before the topic.
    revive_queue_num: int = 8
    revive_interval: int = 1000
    pop_polling_size: int = 1024
    max_pop_polling_size: int = 100_000
    pop_from_retry_probability: int = 20

    @property
    def namesrv_addresses(self) -> list[str]:
        """The name servers as a list (RocketMQ separates them with ';')."""
        return [a.strip() for a in (self.namesrv_addr or "").split(";") if a.strip()]

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    def fast_failure_wait_ms(self, wait_ms: int) -> int | None:
        """How long a request may wait in its queue: ``wait_ms`` with brokerFastFailureEnable,
        else without limit (read per request, so a changed config takes effect at once)."""
        return wait_ms if self.broker_fast_failure_enable else None

    @property
    def ha_host(self) -> str:
        """The host slaves reach this broker's HA port on: brokerIP2, else brokerIP1."""
        return self.broker_ip2 or self.broker_ip1


@dataclass(slots=True)
class BrokerStartupConfig:
    """Everything a broker starts with: its settings, its store's, the keys it ignored, and
    every key broker.conf set (empty without a file), for whoever must tell a key set in the
    file from a default."""

    broker: BrokerConfig
    store: MessageStoreConfig
    unknown_keys: list[str]
    keys: frozenset[str] = frozenset()


def load_broker_config(
    path: str | os.PathLike[str] | None = None,
    environ: dict[str, str] | None = None,
) -> BrokerStartupConfig:
    """Read broker.conf (if given) over the defaults; NAMESRV_ADDR from the environment
    when the file does not set namesrvAddr, as RocketMQ does.

    Raises ConfigError naming the key for a bad value or a missing file; unknown keys are
    logged as warnings and returned.
    """
    environ = dict(os.environ) if environ is None else environ
    broker = BrokerConfig(namesrv_addr=environ.get(NAMESRV_ADDR_ENV))
    store = MessageStoreConfig()
    unknown: list[str] = []
    keys: frozenset[str] = frozenset()
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the broker config {path}: {exc.strerror}") from exc
        properties = parse_properties(text)
        keys = frozenset(properties)
        # The tls.* keys are load_tls_config's.
        unknown = [k for k in bind_properties(properties, [broker, store]) if k not in TLS_KEYS]
        for key in unknown:
            log.warning("%s: unknown key %r ignored", path, key)
    _resolve_ha_keys(broker, store, keys)
    check_broker_config(broker, store)
    return BrokerStartupConfig(broker, store, unknown, keys)


def check_broker_config(broker: BrokerConfig, store: MessageStoreConfig) -> None:
    """Values RocketMQ would refuse or misbehave with, named by their keys (ConfigError);
    checked at start and on each UPDATE_BROKER_CONFIG."""
    if not 0 < broker.listen_port < 65536:
        raise ConfigError(f"listenPort: {broker.listen_port} is not a port (1..65535)")
    if broker.broker_id < 0:
        raise ConfigError(f"brokerId: {broker.broker_id} is negative")
    if not 0 < broker.revive_queue_num < 999:
        raise ConfigError(f"reviveQueueNum: {broker.revive_queue_num} is not in 1..998")
    if not 0 <= broker.pop_from_retry_probability <= 100:
        raise ConfigError(
            f"popFromRetryProbability: {broker.pop_from_retry_probability} is not in 0..100"
        )
    if not 0 <= broker.metrics_prom_exporter_port < 65536:
        raise ConfigError(
            f"metricsPromExporterPort: {broker.metrics_prom_exporter_port} is not a port (0..65535)"
        )
    if not -1 <= broker.console_port < 65536:
        raise ConfigError(f"consolePort: {broker.console_port} is not a port (0..65535, -1: off)")
    if not -1 <= broker.grpc_server_port < 65536:
        raise ConfigError(
            f"grpcServerPort: {broker.grpc_server_port} is not a port (0..65535, -1: off)"
        )
    if broker.console_session_timeout_minutes < 1:
        raise ConfigError(
            f"consoleSessionTimeoutMinutes: {broker.console_session_timeout_minutes} is below 1"
        )
    _check_role(broker, store)
    if broker.default_topic_queue_nums <= 0:
        raise ConfigError(f"defaultTopicQueueNums: {broker.default_topic_queue_nums} must be > 0")
    if store.mapped_file_size_commit_log < 4096:
        raise ConfigError(
            f"mappedFileSizeCommitLog: {store.mapped_file_size_commit_log} is under 4096 bytes"
        )
    if store.mapped_file_size_consume_queue % 20 or store.mapped_file_size_consume_queue <= 0:
        raise ConfigError(
            f"mappedFileSizeConsumeQueue: {store.mapped_file_size_consume_queue} is not a "
            "positive multiple of 20 (the consume-queue unit)"
        )
    for key, wait_ms in (
        ("waitTimeMillsInSendQueue", broker.wait_time_mills_in_send_queue),
        ("waitTimeMillsInPullQueue", broker.wait_time_mills_in_pull_queue),
    ):
        if wait_ms < 0:
            raise ConfigError(f"{key}: {wait_ms} must be >= 0")
    if store.os_page_cache_busy_time_out_mills <= 0:
        raise ConfigError(
            f"osPageCacheBusyTimeOutMills: {store.os_page_cache_busy_time_out_mills} must be > 0"
        )
    if store.max_message_size <= 0:
        raise ConfigError(f"maxMessageSize: {store.max_message_size} must be > 0")
    if not 10 <= store.disk_max_used_space_ratio <= 95:
        raise ConfigError(
            f"diskMaxUsedSpaceRatio: {store.disk_max_used_space_ratio} is outside 10..95"
        )
    _check_timer(store)
    _check_ha(broker, store)


def _resolve_ha_keys(broker: BrokerConfig, store: MessageStoreConfig, keys: frozenset[str]) -> None:
    """haListenPort defaults to listenPort + 1 (RocketMQ 4.9.8 always uses that, even when
    broker.conf sets it; we honour the key); 5.x's haMaxGapNotInSync replaces
    haSlaveFallbehindMax."""
    if "ha_listen_port" not in {snake_case(key) for key in keys}:
        store.ha_listen_port = broker.listen_port + 1
    if store.ha_max_gap_not_in_sync is not None:
        store.ha_slave_fallbehind_max = store.ha_max_gap_not_in_sync


def _check_ha(broker: BrokerConfig, store: MessageStoreConfig) -> None:
    """The replication keys (docs/design/replication.md)."""
    if not 0 <= store.ha_listen_port < 65536 or store.ha_listen_port == broker.listen_port:
        raise ConfigError(
            f"haListenPort: {store.ha_listen_port} is not a port (0..65535) other than "
            f"listenPort {broker.listen_port}"
        )
    if store.ha_send_heartbeat_interval <= 0:
        raise ConfigError(
            f"haSendHeartbeatInterval: {store.ha_send_heartbeat_interval} must be > 0"
        )
    if store.ha_housekeeping_interval <= store.ha_send_heartbeat_interval:
        raise ConfigError(
            f"haHousekeepingInterval: {store.ha_housekeeping_interval} must be more than "
            f"haSendHeartbeatInterval {store.ha_send_heartbeat_interval} (idle connections "
            "would close between heartbeats)"
        )
    if not 0 < store.ha_transfer_batch_size <= MAX_FRAME_BODY_SIZE:
        raise ConfigError(
            f"haTransferBatchSize: {store.ha_transfer_batch_size} is outside "
            f"1..{MAX_FRAME_BODY_SIZE} (a RocketMQ slave reads frames into 4 MiB)"
        )
    if store.ha_slave_fallbehind_max <= 0:
        raise ConfigError(f"haSlaveFallbehindMax: {store.ha_slave_fallbehind_max} must be > 0")
    if store.slave_timeout <= 0:
        raise ConfigError(f"slaveTimeout: {store.slave_timeout} must be > 0 (ms)")
    host, _, port = store.ha_master_address.rpartition(":")
    if store.ha_master_address and not (host and port.isdigit() and 0 < int(port) < 65536):
        raise ConfigError(f"haMasterAddress: {store.ha_master_address!r} is not host:port")
    if not 0 <= store.access_message_in_memory_max_ratio <= 100:
        raise ConfigError(
            f"accessMessageInMemoryMaxRatio: {store.access_message_in_memory_max_ratio} "
            "is outside 0..100"
        )
    if store.cold_read_max_in_flight < 0:
        raise ConfigError(
            f"coldReadMaxInFlight: {store.cold_read_max_in_flight} must be >= 0 (0: none)"
        )
    if not 0 <= store.access_message_in_memory_hot_ratio <= 100:
        raise ConfigError(
            f"accessMessageInMemoryHotRatio: {store.access_message_in_memory_hot_ratio} "
            "is outside 0..100"
        )
    if store.timer_cold_data_check_interval_ms <= 0:
        raise ConfigError(
            f"timerColdDataCheckIntervalMs: {store.timer_cold_data_check_interval_ms} "
            "must be > 0 (ms)"
        )


def _check_role(broker: BrokerConfig, store: MessageStoreConfig) -> None:
    """RocketMQ's BrokerStartup: a master is brokerId 0 whatever the file says; a slave
    needs a brokerId above 0 (the id it registers under and routes list it by)."""
    if store.broker_role is BrokerRole.SLAVE:
        if broker.broker_id <= 0:
            raise ConfigError(
                f"brokerId: {broker.broker_id} must be > 0 for brokerRole SLAVE (0 is the master)"
            )
    elif broker.broker_id != 0:
        log.warning(
            "brokerId: %d ignored for brokerRole %s: a master is brokerId 0",
            broker.broker_id,
            store.broker_role.value,
        )
        broker.broker_id = 0


def _check_timer(store: MessageStoreConfig) -> None:
    """The timer keys: a wheel of sane size (the file holds 2 x maxDelay / precision slots)."""
    if not 10 <= store.timer_precision_ms <= 60_000:
        raise ConfigError(f"timerPrecisionMs: {store.timer_precision_ms} is outside 10..60000")
    # The timer log keeps a delay in a signed 32-bit field of ms, as RocketMQ does.
    if not 1 <= store.timer_max_delay_sec <= 2_000_000:
        raise ConfigError(
            f"timerMaxDelaySec: {store.timer_max_delay_sec} is outside 1..2000000 (23 days)"
        )
    if store.mapped_file_size_timer_log < 4096:
        raise ConfigError(
            f"mappedFileSizeTimerLog: {store.mapped_file_size_timer_log} is under 4096 bytes"
        )
