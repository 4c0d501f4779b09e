"""SubscriptionGroupManager: RocketMQ's system groups, auto-creation and
subscriptionGroup.json."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.subscription_group_manager import SYSTEM_GROUPS, SubscriptionGroupManager
from orbitmq.common.errors import ConfigError
from orbitmq.protocol.body import SubscriptionGroupConfig


def _manager(tmp_path: Path, auto_create: bool = True) -> SubscriptionGroupManager:
    config = BrokerConfig(broker_name="broker-a", auto_create_subscription_group=auto_create)
    return SubscriptionGroupManager(config, tmp_path / "config" / "subscriptionGroup.json")


def test_system_groups_exist_at_start(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    assert set(SYSTEM_GROUPS) == {
        "TOOLS_CONSUMER",
        "FILTERSRV_CONSUMER",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PULL",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
    }
    assert manager.group_names() == set(SYSTEM_GROUPS)
    tools = manager.get("TOOLS_CONSUMER")
    assert tools == SubscriptionGroupConfig(group_name="TOOLS_CONSUMER")


def test_defaults_are_rocketmqs() -> None:
    config = SubscriptionGroupConfig(group_name="g")
    assert (config.retry_queue_nums, config.retry_max_times, config.broker_id) == (1, 16, 0)
    assert config.which_broker_when_consume_slowly == 1
    assert config.consume_enable and config.consume_from_min_enable
    assert config.consume_broadcast_enable and config.notify_consumer_ids_changed_enable
    assert orjson.loads(config.to_json()) == {
        "brokerId": 0,
        # RocketMQ 5's: a FIFO group (POP, 5.x clients) is one with it true.
        "consumeMessageOrderly": False,
        "consumeBroadcastEnable": True,
        "consumeEnable": True,
        "consumeFromMinEnable": True,
        "groupName": "g",
        "notifyConsumerIdsChangedEnable": True,
        "retryMaxTimes": 16,
        "retryQueueNums": 1,
        "whichBrokerWhenConsumeSlowly": 1,
    }


def test_auto_create_on(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    version = manager.data_version.counter
    created = manager.find_subscription_group_config("my_group")
    assert created == SubscriptionGroupConfig(group_name="my_group")
    assert manager.find_subscription_group_config("my_group") is created
    assert manager.data_version.counter == version + 1
    saved = orjson.loads(Path(manager.config_path).read_bytes())
    assert saved["subscriptionGroupTable"]["my_group"]["retryQueueNums"] == 1
    assert saved["dataVersion"]["counter"] == version + 1


def test_auto_create_off_except_for_system_groups(tmp_path: Path) -> None:
    manager = _manager(tmp_path, auto_create=False)
    assert manager.find_subscription_group_config("my_group") is None
    assert manager.find_subscription_group_config("CID_RMQ_SYS_TRANS") is not None


def test_round_trip_and_delete(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.update_subscription_group_config(
        SubscriptionGroupConfig(group_name="g1", retry_queue_nums=3, consume_broadcast_enable=False)
    )
    manager.find_subscription_group_config("g2")
    assert manager.delete_subscription_group_config("g2") is not None
    assert manager.delete_subscription_group_config("g2") is None

    reloaded = _manager(tmp_path)
    reloaded.load()
    assert reloaded.get("g1") == manager.get("g1")
    assert reloaded.get("g2") is None
    assert reloaded.data_version == manager.data_version
    assert reloaded.snapshot() == manager.snapshot()


def test_bak_fallback_and_error(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.find_subscription_group_config("g1")
    manager.find_subscription_group_config("g2")
    path = Path(manager.config_path)
    path.write_bytes(b"{")
    reloaded = _manager(tmp_path)
    reloaded.load()
    assert reloaded.get("g1") is not None and reloaded.get("g2") is None

    path.with_name(path.name + ".bak").write_bytes(b"garbage")
    with pytest.raises(ConfigError, match=r"subscriptionGroup\.json"):
        _manager(tmp_path).load()


def test_disable_consume(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    group = manager.find_subscription_group_config("g")
    assert group is not None
    manager.disable_consume("g")
    assert not group.consume_enable


def test_reads_a_rocketmq_file(tmp_path: Path) -> None:
    path = tmp_path / "config" / "subscriptionGroup.json"
    path.parent.mkdir()
    path.write_text(
        '{"dataVersion":{"counter":3,"timestamp":1690000000000},"subscriptionGroupTable":{'
        '"please_rename_unique_group_name_4":{"brokerId":0,"consumeBroadcastEnable":true,'
        '"consumeEnable":true,"consumeFromMinEnable":true,"groupName":'
        '"please_rename_unique_group_name_4","notifyConsumerIdsChangedEnable":true,'
        '"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}}}'
    )
    manager = _manager(tmp_path, auto_create=False)
    manager.load()
    found = manager.find_subscription_group_config("please_rename_unique_group_name_4")
    assert found == SubscriptionGroupConfig(group_name="please_rename_unique_group_name_4")
    assert manager.data_version.counter == 3
    assert "TOOLS_CONSUMER" in manager.group_names()
