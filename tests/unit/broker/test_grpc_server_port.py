"""grpcServerPort: RocketMQ's proxy key and default (8081), read from broker.conf and
checked (-1 off, 0 any free port); ``orbitmq start`` serves it, on a free port when the
broker takes one; a bad value names the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker import load_broker_config
from orbitmq.cli.servers import embedded_config
from orbitmq.common.errors import ConfigError


def test_default_and_file(tmp_path: Path) -> None:
    assert load_broker_config().broker.grpc_server_port == 8081
    conf = tmp_path / "broker.conf"
    conf.write_text("grpcServerPort=-1\n")
    assert load_broker_config(conf).broker.grpc_server_port == -1


@pytest.mark.parametrize("value", ["65536", "-2"])
def test_a_bad_port_names_the_key(tmp_path: Path, value: str) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(f"grpcServerPort={value}\n")
    with pytest.raises(ConfigError, match=f"grpcServerPort: {value} is not a port"):
        load_broker_config(conf)


def test_orbitmq_start_ports(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    assert embedded_config(None, data).broker.grpc_server_port == 8081
    assert embedded_config(None, data, listen_port=0).broker.grpc_server_port == 0
    assert embedded_config(None, data, listen_port=0, grpc_port=-1).broker.grpc_server_port == -1
    conf = tmp_path / "broker.conf"
    conf.write_text("grpcServerPort=9091\n")
    assert embedded_config(str(conf), data, listen_port=0).broker.grpc_server_port == 9091
    with pytest.raises(ConfigError, match="--grpc-port: 70000 is not a port"):
        embedded_config(None, data, grpc_port=70000)
