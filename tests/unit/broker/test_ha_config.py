"""broker.conf's replication keys: RocketMQ's names and defaults, and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.broker import load_broker_config
from orbitmq.broker.broker_config import BrokerStartupConfig
from orbitmq.cli.servers import embedded_config
from orbitmq.common.errors import ConfigError
from orbitmq.store import BrokerRole


def _load(tmp_path: Path, text: str) -> BrokerStartupConfig:
    conf = tmp_path / "broker.conf"
    conf.write_text(text)
    return load_broker_config(conf, environ={})


def test_defaults_are_rocketmqs(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "listenPort=20911\n")
    store = loaded.store
    assert store.ha_listen_port == 20912  # listenPort + 1
    assert store.ha_send_heartbeat_interval == 5000
    assert store.ha_housekeeping_interval == 20_000
    assert store.ha_transfer_batch_size == 32 * 1024
    assert store.ha_slave_fallbehind_max == 256 * 1024 * 1024
    assert store.ha_master_address == ""
    assert store.access_message_in_memory_max_ratio == 40
    assert store.slave_timeout == 3000
    assert loaded.broker.slave_read_enable is False
    assert loaded.broker.ha_host == loaded.broker.broker_ip1 == ""


def test_every_key_is_bound(tmp_path: Path) -> None:
    loaded = _load(
        tmp_path,
        "brokerRole=SLAVE\nbrokerId=1\nhaListenPort=30912\nbrokerIP1=10.0.0.1\n"
        "brokerIP2=10.0.1.1\nhaMasterAddress=10.0.1.2:10912\nhaSendHeartbeatInterval=1000\n"
        "haHousekeepingInterval=4000\nhaTransferBatchSize=65536\nhaSlaveFallbehindMax=1024\n"
        "slaveReadEnable=true\naccessMessageInMemoryMaxRatio=30\nslaveTimeout=700\n",
    )
    broker, store = loaded.broker, loaded.store
    assert loaded.unknown_keys == []
    assert store.broker_role is BrokerRole.SLAVE
    assert store.ha_listen_port == 30912
    assert broker.ha_host == "10.0.1.1"
    assert store.ha_master_address == "10.0.1.2:10912"
    assert store.slave_timeout == 700
    assert (store.ha_send_heartbeat_interval, store.ha_housekeeping_interval) == (1000, 4000)
    assert store.ha_transfer_batch_size == 65536
    assert store.ha_slave_fallbehind_max == 1024
    assert broker.slave_read_enable is True
    assert store.access_message_in_memory_max_ratio == 30


def test_rocketmq_5s_name_for_the_fallbehind_max(tmp_path: Path) -> None:
    assert _load(tmp_path, "haMaxGapNotInSync=4096\n").store.ha_slave_fallbehind_max == 4096


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("haListenPort=70000\n", "haListenPort: 70000 is not a port (0..65535) other than"),
        ("listenPort=9000\nhaListenPort=9000\n", "other than listenPort 9000"),
        ("brokerRole=SLAVE\n", "brokerId: 0 must be > 0 for brokerRole SLAVE"),
        ("haSendHeartbeatInterval=0\n", "haSendHeartbeatInterval: 0 must be > 0"),
        ("haHousekeepingInterval=5000\n", "haHousekeepingInterval: 5000 must be more than"),
        ("haTransferBatchSize=0\n", "haTransferBatchSize: 0 is outside 1..4194292"),
        ("haTransferBatchSize=8388608\n", "haTransferBatchSize: 8388608 is outside"),
        ("haSlaveFallbehindMax=-1\n", "haSlaveFallbehindMax: -1 must be > 0"),
        ("slaveTimeout=0\n", "slaveTimeout: 0 must be > 0 (ms)"),
        ("haMasterAddress=nohost\n", "haMasterAddress: 'nohost' is not host:port"),
        ("haMasterAddress=h:99999\n", "haMasterAddress: 'h:99999' is not host:port"),
        ("accessMessageInMemoryMaxRatio=101\n", "accessMessageInMemoryMaxRatio: 101 is outside"),
    ],
)
def test_bad_values_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _load(tmp_path, text)


def test_a_listen_port_from_the_command_line_moves_the_ha_port(tmp_path: Path) -> None:
    """`orbitmq start --listen-port 10921` beside a first server: HA on 10922, not the first
    server's 10912; broker.conf's own haListenPort still wins; port 0 takes any HA port."""
    data = str(tmp_path / "data")
    assert embedded_config(None, data, listen_port=10921).store.ha_listen_port == 10922
    assert embedded_config(None, data, listen_port=0).store.ha_listen_port == 0
    conf = tmp_path / "broker.conf"
    conf.write_text("haListenPort=20000\n")
    assert embedded_config(str(conf), data, listen_port=10921).store.ha_listen_port == 20000
