"""The name server's settings (RocketMQ's ``NamesrvConfig`` and the server half of
``NettyServerConfig``), read from a namesrv.conf in RocketMQ's properties format here and
nowhere else."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from orbitmq.common.config_binding import bind_properties
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties
from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.protocol import DEFAULT_NAMESRV_PORT
from orbitmq.remoting import DEFAULT_PROM_EXPORTER_PORT, TLS_KEYS

log = logging.getLogger(__name__)


def _home() -> str:
    return os.environ.get("ROCKETMQ_HOME", "")


def _default_kv_config_path() -> str:
    return str(Path.home() / "namesrv" / "kvConfig.json")


def _default_config_store_path() -> str:
    return str(Path.home() / "namesrv" / "namesrv.properties")


#: The keys UPDATE_NAMESRV_CONFIG refuses by default (RocketMQ's configBlackList).
DEFAULT_CONFIG_BLACK_LIST = "configBlackList;configStorePath;kvConfigPath"


@dataclass(slots=True)
class NamesrvConfig:
    """Name server settings under RocketMQ's keys (snake_case of ``listenPort`` etc.).
    Plain data, set up before start."""

    rocketmq_home: str = field(default_factory=_home)
    #: Where the KV configuration is kept; "" keeps it in memory only.
    kv_config_path: str = field(default_factory=_default_kv_config_path)
    #: Where UPDATE_NAMESRV_CONFIG writes the whole configuration: the ``-c`` file when the
    #: name server was started with one (RocketMQ's NamesrvStartup), else this default.
    config_store_path: str = field(default_factory=_default_config_store_path)
    #: Keys UPDATE_NAMESRV_CONFIG may not change, separated by ``;``.
    config_black_list: str = DEFAULT_CONFIG_BLACK_LIST
    product_env_name: str = "center"
    cluster_test: bool = False
    order_message_enable: bool = False
    #: The address to listen on (RocketMQ 5's bindAddress): every interface by default.
    bind_address: str = "0.0.0.0"
    listen_port: int = DEFAULT_NAMESRV_PORT
    server_channel_max_idle_time_seconds: int = 120
    #: How often silent brokers are looked for (RocketMQ: every 10 s).
    scan_not_active_broker_interval_ms: int = 10_000
    #: Metrics, under the broker's RocketMQ 5 keys: PROM serves Prometheus text at
    #: ``/metrics`` on metricsPromExporterHost (empty: bindAddress) and
    #: metricsPromExporterPort (0: any free port); metricsLabel adds "k:v,..." labels.
    metrics_exporter_type: MetricsExporterType = MetricsExporterType.DISABLE
    metrics_prom_exporter_host: str = ""
    metrics_prom_exporter_port: int = DEFAULT_PROM_EXPORTER_PORT
    metrics_label: str = ""


def load_namesrv_config(path: str | os.PathLike[str] | None = None) -> NamesrvConfig:
    """Read namesrv.conf (if given) over the defaults. Unknown keys are warned about; a bad
    value is a ConfigError naming its key."""
    config = NamesrvConfig()
    if path is not None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the name server config {path}: {exc.strerror}") from exc
        for key in bind_properties(parse_properties(text), [config]):
            if key in TLS_KEYS:
                continue  # read by load_tls_config
            log.warning("%s: unknown key %r ignored", path, key)
        config.config_store_path = str(path)
    if not 0 <= config.listen_port < 65536:
        raise ConfigError(f"listenPort: {config.listen_port} is not a port (0..65535)")
    if not 0 <= config.metrics_prom_exporter_port < 65536:
        raise ConfigError(
            f"metricsPromExporterPort: {config.metrics_prom_exporter_port} is not a port (0..65535)"
        )
    if config.server_channel_max_idle_time_seconds <= 0:
        raise ConfigError(
            "serverChannelMaxIdleTimeSeconds: "
            f"{config.server_channel_max_idle_time_seconds} must be > 0"
        )
    if config.scan_not_active_broker_interval_ms <= 0:
        raise ConfigError(
            f"scanNotActiveBrokerIntervalMs: {config.scan_not_active_broker_interval_ms} "
            "must be > 0"
        )
    return config
