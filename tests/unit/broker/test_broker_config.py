"""broker.conf: RocketMQ's keys reach the broker and store settings; bad ones are named."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from orbitmq.broker import load_broker_config
from orbitmq.common.errors import ConfigError
from orbitmq.store import BrokerRole, FlushDiskType

CONF = """\
brokerClusterName=ProdCluster
brokerName=broker-a
brokerId=0
namesrvAddr=10.0.0.1:9876;10.0.0.2:9876
listenPort=20911
storePathRootDir={root}
storePathCommitLog={root}/cl
flushDiskType=SYNC_FLUSH
brokerRole=SYNC_MASTER
fileReservedTime=48
deleteWhen=03
mappedFileSizeCommitLog=1048576
mappedFileSizeConsumeQueue=6000
autoCreateTopicEnable=false
maxMessageSize=65536
defaultTopicQueueNums=4
checkCRCOnRecover=false
"""


def test_rocketmq_keys_are_honoured(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(CONF.format(root=tmp_path / "data"))
    loaded = load_broker_config(conf, environ={})
    broker, store = loaded.broker, loaded.store
    assert loaded.unknown_keys == []
    assert (broker.broker_cluster_name, broker.broker_name, broker.broker_id) == (
        "ProdCluster",
        "broker-a",
        0,
    )
    assert broker.namesrv_addresses == ["10.0.0.1:9876", "10.0.0.2:9876"]
    assert broker.listen_port == 20911
    assert not broker.auto_create_topic_enable
    assert broker.default_topic_queue_nums == 4
    assert store.store_path_root_dir == str(tmp_path / "data")
    assert store.commit_log_dir == str(tmp_path / "data" / "cl")
    assert store.flush_disk_type is FlushDiskType.SYNC_FLUSH
    assert store.broker_role is BrokerRole.SYNC_MASTER
    assert (store.file_reserved_time, store.delete_when) == (48, "03")
    assert store.mapped_file_size_commit_log == 1048576
    assert store.mapped_file_size_consume_queue == 6000
    assert store.max_message_size == 65536
    assert not store.check_crc_on_recover


def test_defaults_are_rocketmqs_and_namesrv_comes_from_the_environment() -> None:
    loaded = load_broker_config(None, environ={"NAMESRV_ADDR": "127.0.0.1:9876"})
    assert loaded.broker.broker_cluster_name == "DefaultCluster"
    assert loaded.broker.listen_port == 10911
    assert loaded.broker.namesrv_addresses == ["127.0.0.1:9876"]
    assert loaded.store.flush_disk_type is FlushDiskType.ASYNC_FLUSH
    assert loaded.store.mapped_file_size_commit_log == 1024**3
    # RocketMQ 5's timer keys; the precision is ours (RocketMQ: 1000).
    assert loaded.store.timer_wheel_enable
    assert loaded.store.timer_max_delay_sec == 259_200
    assert loaded.store.timer_precision_ms == 100


def test_timer_keys_bind(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("timerWheelEnable=false\ntimerMaxDelaySec=3600\ntimerPrecisionMs=500\n")
    store = load_broker_config(conf, environ={}).store
    assert (store.timer_wheel_enable, store.timer_max_delay_sec, store.timer_precision_ms) == (
        False,
        3600,
        500,
    )


def test_unknown_keys_are_warned_about(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=b\nflushDiskTyp=SYNC_FLUSH\n")
    with caplog.at_level(logging.WARNING):
        loaded = load_broker_config(conf, environ={})
    assert loaded.unknown_keys == ["flushDiskTyp"]
    assert "flushDiskTyp" in caplog.text


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("listenPort=abc", r"listenPort: 'abc' is not a valid int"),
        ("listenPort=70000", r"listenPort: 70000 is not a port"),
        ("flushDiskType=SOMETIMES", r"flushDiskType: 'SOMETIMES' is not a valid ASYNC_FLUSH or"),
        ("autoCreateTopicEnable=maybe", r"autoCreateTopicEnable: 'maybe' is not a valid bool"),
        ("mappedFileSizeConsumeQueue=6001", r"mappedFileSizeConsumeQueue: 6001 is not"),
        ("diskMaxUsedSpaceRatio=99", r"diskMaxUsedSpaceRatio: 99 is outside 10..95"),
        ("brokerId=-1", r"brokerId: -1 is negative"),
        ("brokerRole=SLAVE", r"brokerId: 0 must be > 0 for brokerRole SLAVE \(0 is the master\)"),
        ("waitTimeMillsInSendQueue=-5", r"waitTimeMillsInSendQueue: -5 must be >= 0"),
        ("waitTimeMillsInPullQueue=-1", r"waitTimeMillsInPullQueue: -1 must be >= 0"),
        ("osPageCacheBusyTimeOutMills=0", r"osPageCacheBusyTimeOutMills: 0 must be > 0"),
        ("timerPrecisionMs=5", r"timerPrecisionMs: 5 is outside 10..60000"),
        ("timerMaxDelaySec=0", r"timerMaxDelaySec: 0 is outside 1..2000000 \(23 days\)"),
        ("mappedFileSizeTimerLog=52", r"mappedFileSizeTimerLog: 52 is under 4096 bytes"),
    ],
)
def test_bad_values_are_rejected_naming_the_key(tmp_path: Path, line: str, message: str) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text(line + "\n")
    with pytest.raises(ConfigError, match=message):
        load_broker_config(conf, environ={})


def test_a_slave_keeps_its_id_and_a_master_is_id_0(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerRole=SLAVE\nbrokerId=2\n")
    assert load_broker_config(conf, environ={}).broker.broker_id == 2
    conf.write_text("brokerRole=SYNC_MASTER\nbrokerId=2\n")
    assert load_broker_config(conf, environ={}).broker.broker_id == 0


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the broker config"):
        load_broker_config(tmp_path / "nope.conf", environ={})


def test_message_type_keys_bind(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("enableTopicMessageTypeCheck=false\nenableMixedMessageType=true\n")
    broker = load_broker_config(conf, environ={}).broker
    assert (broker.enable_topic_message_type_check, broker.enable_mixed_message_type) == (
        False,
        True,
    )
    defaults = load_broker_config(None, environ={}).broker
    assert (defaults.enable_topic_message_type_check, defaults.enable_mixed_message_type) == (
        True,
        False,
    )
