"""traceTopicEnable and msgTraceTopicName: the broker creates the trace topic at start as
RocketMQ 4.9.8's TopicConfigManager does (one read and one write queue, read-write, a
system topic), and only when asked."""

from __future__ import annotations

from pathlib import Path

from orbitmq.broker import load_broker_config
from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.store import MessageStoreConfig


def _manager(tmp_path: Path, config: BrokerConfig) -> TopicConfigManager:
    store = MessageStoreConfig(store_path_root_dir=str(tmp_path))
    return TopicConfigManager(config, store.config_file("topics"))


def test_keys_and_defaults_are_rocketmqs(tmp_path: Path) -> None:
    defaults = BrokerConfig(broker_name="b")
    assert (defaults.trace_topic_enable, defaults.msg_trace_topic_name) == (
        False,
        "RMQ_SYS_TRACE_TOPIC",
    )
    conf = tmp_path / "broker.conf"
    conf.write_text("traceTopicEnable=true\nmsgTraceTopicName=MyTraces\n")
    loaded = load_broker_config(conf, environ={}).broker
    assert (loaded.trace_topic_enable, loaded.msg_trace_topic_name) == (True, "MyTraces")


def test_trace_topic_created_with_one_queue_when_enabled(tmp_path: Path) -> None:
    manager = _manager(tmp_path, BrokerConfig(broker_name="b", trace_topic_enable=True))
    tc = manager.select_topic_config("RMQ_SYS_TRACE_TOPIC")
    assert tc is not None
    assert (tc.read_queue_nums, tc.write_queue_nums, tc.perm) == (1, 1, PERM_READ | PERM_WRITE)
    assert "RMQ_SYS_TRACE_TOPIC" in manager.system_topics


def test_custom_trace_topic_name(tmp_path: Path) -> None:
    config = BrokerConfig(broker_name="b", trace_topic_enable=True, msg_trace_topic_name="T1")
    manager = _manager(tmp_path, config)
    assert manager.select_topic_config("T1") is not None
    assert manager.select_topic_config("RMQ_SYS_TRACE_TOPIC") is None


def test_no_trace_topic_by_default(tmp_path: Path) -> None:
    manager = _manager(tmp_path, BrokerConfig(broker_name="b"))
    assert manager.select_topic_config("RMQ_SYS_TRACE_TOPIC") is None
