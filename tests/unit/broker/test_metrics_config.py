"""The metrics keys (RocketMQ 5's metricsExporterType, metricsPromExporterHost/Port,
metricsLabel) in broker.conf and namesrv.conf, and ``orbitmq start``'s defaults for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker import load_broker_config
from orbitmq.cli.servers import embedded_config
from orbitmq.common.errors import ConfigError
from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.namesrv import load_namesrv_config


def test_broker_metrics_are_off_by_default_with_rocketmq_5s_port() -> None:
    config = load_broker_config(environ={}).broker
    assert config.metrics_exporter_type is MetricsExporterType.DISABLE
    assert config.metrics_prom_exporter_port == 5557
    assert config.metrics_prom_exporter_host == ""


def test_broker_conf_sets_the_metrics_keys(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "metricsExporterType=PROM\nmetricsPromExporterHost=127.0.0.2\n"
        "metricsPromExporterPort=9557\nmetricsLabel=env:prod,dc:eu\n"
    )
    startup = load_broker_config(conf, environ={})
    assert startup.unknown_keys == []
    config = startup.broker
    assert config.metrics_exporter_type is MetricsExporterType.PROM
    assert (config.metrics_prom_exporter_host, config.metrics_prom_exporter_port) == (
        "127.0.0.2",
        9557,
    )
    assert config.metrics_label == "env:prod,dc:eu"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("metricsExporterType=PROMETHEUS", "metricsExporterType: 'PROMETHEUS' is not a valid"),
        ("metricsPromExporterPort=70000", "metricsPromExporterPort: 70000 is not a port"),
    ],
)
def test_bad_metrics_keys_are_named(tmp_path: Path, line: str, message: str) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(line + "\n")
    with pytest.raises(ConfigError, match=message):
        load_broker_config(conf, environ={})


def test_namesrv_conf_takes_the_same_keys(tmp_path: Path) -> None:
    conf = tmp_path / "namesrv.conf"
    conf.write_text("metricsExporterType=prom\nmetricsPromExporterPort=0\n")
    config = load_namesrv_config(conf)
    assert config.metrics_exporter_type is MetricsExporterType.PROM
    assert config.metrics_prom_exporter_port == 0
    assert load_namesrv_config().metrics_exporter_type is MetricsExporterType.DISABLE


def test_orbitmq_start_serves_metrics_by_default(tmp_path: Path) -> None:
    embedded = embedded_config(None, str(tmp_path / "data"))
    assert embedded.broker.metrics_exporter_type is MetricsExporterType.PROM
    assert embedded.namesrv.metrics_exporter_type is MetricsExporterType.PROM
    # Two servers in one process: the name server's port is the broker's next one.
    assert embedded.broker.metrics_prom_exporter_port == 5557
    assert embedded.namesrv.metrics_prom_exporter_port == 5558


def test_orbitmq_start_on_free_ports_takes_free_metrics_ports(tmp_path: Path) -> None:
    embedded = embedded_config(None, str(tmp_path / "data"), namesrv_port=0, listen_port=0)
    assert embedded.broker.metrics_prom_exporter_port == 0
    assert embedded.namesrv.metrics_prom_exporter_port == 0
    chosen = embedded_config(None, str(tmp_path / "data"), listen_port=0, metrics_port=6000)
    assert (
        chosen.broker.metrics_prom_exporter_port,
        chosen.namesrv.metrics_prom_exporter_port,
    ) == (
        6000,
        6001,
    )


def test_the_file_wins_over_orbitmq_starts_metrics_defaults(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("metricsExporterType=DISABLE\n")
    embedded = embedded_config(str(conf), str(tmp_path / "data"))
    assert embedded.broker.metrics_exporter_type is MetricsExporterType.DISABLE
    assert embedded.namesrv.metrics_exporter_type is MetricsExporterType.DISABLE
