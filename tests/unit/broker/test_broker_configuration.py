"""BrokerConfiguration: the properties text GET_BROKER_CONFIG answers (RocketMQ's keys),
UPDATE_BROKER_CONFIG's black list, checks and live / at-restart split, and the rewrite of the
broker's config file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, load_broker_config
from orbitmq.broker.broker_configuration import (
    BrokerConfiguration,
    config_key,
    rewrite_properties,
)
from orbitmq.common.config_binding import snake_case
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties
from orbitmq.store import FlushDiskType, MessageStoreConfig
from orbitmq.testing import ManualClock


def _configuration(path: Path | None = None) -> BrokerConfiguration:
    return BrokerConfiguration(
        BrokerConfig(broker_name="broker-a"),
        MessageStoreConfig(store_path_root_dir="/data/store"),
        str(path) if path else None,
        clock=ManualClock(1_700_000_000_000),
    )


@pytest.mark.parametrize("config_class", [BrokerConfig, MessageStoreConfig])
def test_every_field_has_its_rocketmq_key_and_binds_back(config_class: type) -> None:
    for f in dataclasses.fields(config_class):
        assert snake_case(config_key(f.name)) == f.name


def test_keys_that_are_not_plain_camel_case() -> None:
    assert config_key("broker_ip1") == "brokerIP1"
    assert config_key("check_crc_on_recover") == "checkCRCOnRecover"
    assert config_key("os_page_cache_busy_time_out_mills") == "osPageCacheBusyTimeOutMills"


def test_the_properties_text_holds_every_key_as_java_writes_values() -> None:
    configuration = _configuration()
    configuration.store_config.flush_disk_type = FlushDiskType.SYNC_FLUSH
    properties = parse_properties(configuration.all_configs_text())
    assert properties["brokerName"] == "broker-a"
    assert properties["storePathRootDir"] == "/data/store"
    assert properties["flushDiskType"] == "SYNC_FLUSH"
    assert properties["autoCreateTopicEnable"] == "true"
    assert properties["diskSpaceWarningLevelRatio"] == "0.9"
    assert properties["configBlackList"] == "configBlackList;brokerConfigPath"
    assert "haMaxGapNotInSync" not in properties  # None: left out, as RocketMQ leaves null
    assert configuration.data_version_json() == '{"counter":0,"timestamp":1700000000000}'


@pytest.mark.parametrize(
    "key", ["brokerConfigPath", "rocketmqHome", "configBlackList", "brokerPermission"]
)
def test_black_listed_keys(key: str) -> None:
    configuration = _configuration()
    configuration.broker_config.config_black_list = "brokerPermission;"
    assert configuration.black_listed({key: "x", "fileReservedTime": "1"}) == [key]
    assert configuration.black_listed({"fileReservedTime": "1"}) == []


def test_an_update_sets_live_keys_and_saves_them(tmp_path: Path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("# my broker\nbrokerName = broker-a\nfileReservedTime=48\n")
    configuration = _configuration(conf)
    update = configuration.update(
        {"fileReservedTime": "12", "listenPort": "10921", "noSuchKey": "1"}
    )
    assert update.applied == ("fileReservedTime",)
    assert update.on_restart == ("listenPort",)
    assert update.ignored == ("noSuchKey",)
    assert configuration.store_config.file_reserved_time == 12
    assert configuration.broker_config.listen_port == 10911  # at the next start
    assert configuration.data_version.counter == 1
    assert conf.read_text() == (
        "# my broker\nbrokerName = broker-a\nfileReservedTime=12\nlistenPort=10921\n"
    )
    assert (tmp_path / "broker.conf.bak").read_text().endswith("fileReservedTime=48\n")
    restarted = load_broker_config(conf, environ={})
    assert restarted.store.file_reserved_time == 12
    assert restarted.broker.listen_port == 10921


@pytest.mark.parametrize(
    ("properties", "named"),
    [
        ({"fileReservedTime": "soon"}, "fileReservedTime"),
        ({"diskMaxUsedSpaceRatio": "99"}, "diskMaxUsedSpaceRatio"),
        ({"fileReservedTime": "1", "listenPort": "70000"}, "listenPort"),
    ],
)
def test_a_refused_value_changes_nothing(
    tmp_path: Path, properties: dict[str, str], named: str
) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("brokerName=broker-a\n")
    configuration = _configuration(conf)
    with pytest.raises(ConfigError, match=named):
        configuration.update(properties)
    assert configuration.store_config.file_reserved_time == 72
    assert configuration.data_version.counter == 0
    assert conf.read_text() == "brokerName=broker-a\n"


def test_without_a_config_file_the_change_is_live_only() -> None:
    configuration = _configuration()
    assert configuration.update({"fileReservedTime": "5"}).applied == ("fileReservedTime",)
    assert configuration.store_config.file_reserved_time == 5


def test_rewrite_keeps_the_files_spelling_comments_and_escapes_values() -> None:
    text = "! comment\nBrokerName:old\n\nlistenPort 10911\n"
    rewritten = rewrite_properties(text, {"brokerName": "new", "rocketmqHome": "C:\\mq"})
    assert rewritten == "! comment\nBrokerName=new\n\nlistenPort 10911\nrocketmqHome=C:\\\\mq\n"
    assert parse_properties(rewritten)["rocketmqHome"] == "C:\\mq"
