"""TopicConfigManager: RocketMQ's system topics, auto-creation from TBW102, retry topics,
name validation and topics.json with its .bak."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.topic_config_manager import InvalidTopicError, TopicConfigManager
from orbitmq.common.errors import ConfigError
from orbitmq.common.topic_attributes import TopicAttributeError
from orbitmq.common.topic_message_type import TopicMessageType
from orbitmq.protocol.body import TopicConfig
from orbitmq.protocol.perm_name import PERM_INHERIT, PERM_READ, PERM_WRITE
from orbitmq.store import MessageStoreConfig

RW = PERM_READ | PERM_WRITE


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def now_ms(self) -> int:
        self.now += 1
        return self.now

    def monotonic(self) -> float:
        return self.now / 1000


def _config(**changes: object) -> BrokerConfig:
    config = BrokerConfig(broker_name="broker-a", broker_cluster_name="DefaultCluster")
    for key, value in changes.items():
        setattr(config, key, value)
    return config


def _manager(
    tmp_path: Path, on_new_topic: Callable[[TopicConfig], None] | None = None, **changes: object
) -> TopicConfigManager:
    store = MessageStoreConfig(store_path_root_dir=str(tmp_path))
    return TopicConfigManager(
        _config(**changes),
        store.config_file("topics"),
        clock=FakeClock(),
        on_new_topic=on_new_topic,
    )


def test_config_path_is_the_store_config_dir(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    assert manager.config_path == str(tmp_path / "config" / "topics.json")


def test_system_topics_have_rocketmqs_queue_counts_and_perms(tmp_path: Path) -> None:
    manager = _manager(tmp_path, default_topic_queue_nums=8)

    def shape(topic: str) -> tuple[int, int, int]:
        tc = manager.select_topic_config(topic)
        assert tc is not None, topic
        return tc.read_queue_nums, tc.write_queue_nums, tc.perm

    assert shape("SELF_TEST_TOPIC") == (1, 1, RW)
    assert shape("TBW102") == (8, 8, RW | PERM_INHERIT)
    assert shape("BenchmarkTest") == (1024, 1024, RW)
    assert shape("DefaultCluster") == (16, 16, RW | PERM_INHERIT)
    assert shape("broker-a") == (1, 1, RW | PERM_INHERIT)
    assert shape("OFFSET_MOVED_EVENT") == (1, 1, RW)
    assert shape("SCHEDULE_TOPIC_XXXX") == (18, 18, RW)
    assert shape("DefaultCluster_REPLY_TOPIC") == (1, 1, RW)
    assert "TBW102" in manager.system_topics


def test_cluster_and_broker_topics_only_inherit_when_disabled(tmp_path: Path) -> None:
    manager = _manager(
        tmp_path,
        auto_create_topic_enable=False,
        cluster_topic_enable=False,
        broker_topic_enable=False,
    )
    assert manager.select_topic_config("TBW102") is None
    cluster = manager.select_topic_config("DefaultCluster")
    broker = manager.select_topic_config("broker-a")
    assert cluster is not None and cluster.perm == PERM_INHERIT
    assert broker is not None and broker.perm == PERM_INHERIT


def test_send_auto_creates_from_tbw102(tmp_path: Path) -> None:
    created_events: list[TopicConfig] = []
    manager = _manager(tmp_path, created_events.append, default_topic_queue_nums=8)
    version = manager.data_version.counter

    created = manager.create_topic_in_send_message_method("NewTopic", "TBW102", "1.2.3.4:5", 4, 0)

    assert created is not None
    assert (created.read_queue_nums, created.write_queue_nums, created.perm) == (4, 4, RW)
    assert manager.select_topic_config("NewTopic") is created
    assert manager.data_version.counter == version + 1
    assert created_events == [created]
    saved = orjson.loads((tmp_path / "config" / "topics.json").read_bytes())
    assert saved["topicConfigTable"]["NewTopic"]["perm"] == RW
    # The client may not ask for more queues than TBW102 has.
    bigger = manager.create_topic_in_send_message_method("Big", "TBW102", "h:1", 64, 0)
    assert bigger is not None and bigger.write_queue_nums == 8
    # An existing topic is returned as it is.
    assert manager.create_topic_in_send_message_method("NewTopic", "TBW102", "h", 1, 0) is created


def test_send_does_not_create_when_auto_create_is_off(tmp_path: Path) -> None:
    manager = _manager(tmp_path, auto_create_topic_enable=False)
    assert manager.create_topic_in_send_message_method("T", "TBW102", "h:1", 4, 0) is None
    assert manager.select_topic_config("T") is None
    assert not (tmp_path / "config" / "topics.json").exists()


def test_tbw102_from_an_old_file_stops_inheriting_when_auto_create_is_off(tmp_path: Path) -> None:
    _manager(tmp_path).persist()  # the file holds TBW102 with PERM_INHERIT
    manager = _manager(tmp_path, auto_create_topic_enable=False)
    manager.load()
    assert manager.select_topic_config("TBW102") is not None
    assert manager.create_topic_in_send_message_method("T", "TBW102", "h:1", 4, 0) is None
    tbw = manager.select_topic_config("TBW102")
    assert tbw is not None and tbw.perm == RW


def test_no_inherit_from_a_plain_topic(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    assert manager.create_topic_in_send_message_method("T", "SELF_TEST_TOPIC", "h", 4, 0) is None
    assert manager.create_topic_in_send_message_method("T", "NoSuchTopic", "h", 4, 0) is None


def test_retry_topic_created_for_a_group(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    retry = manager.create_retry_topic("my_group", retry_queue_nums=1)
    assert retry.topic_name == "%RETRY%my_group"
    assert (retry.read_queue_nums, retry.write_queue_nums, retry.perm) == (1, 1, RW)
    assert manager.select_topic_config("%RETRY%my_group") is retry
    assert manager.create_retry_topic("my_group", 5) is retry
    wrapper = manager.build_topic_config_serialize_wrapper()
    assert "%RETRY%my_group" in wrapper.topic_config_table


@pytest.mark.parametrize(
    ("topic", "reason"),
    [("", "empty"), ("bad topic", "characters"), ("x" * 128, "127")],
)
def test_invalid_topic_names_are_refused(tmp_path: Path, topic: str, reason: str) -> None:
    manager = _manager(tmp_path)
    with pytest.raises(InvalidTopicError, match=reason):
        manager.update_topic_config(TopicConfig(topic))
    with pytest.raises(InvalidTopicError, match=reason):
        manager.create_topic_in_send_message_method(topic, "TBW102", "h", 4, 0)


def test_round_trip_through_topics_json(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.update_topic_config(TopicConfig("Orders", 4, 2, RW, topic_sys_flag=1, order=True))
    manager.delete_topic_config("BenchmarkTest")
    assert manager.delete_topic_config("NoSuch") is None

    reloaded = _manager(tmp_path)
    reloaded.load()
    assert reloaded.select_topic_config("Orders") == TopicConfig(
        "Orders", 4, 2, RW, topic_sys_flag=1, order=True
    )
    assert reloaded.data_version == manager.data_version
    # Deleted system topics come back at start, as in RocketMQ.
    assert reloaded.select_topic_config("BenchmarkTest") is not None
    assert reloaded.is_order_topic("Orders")


def test_bak_is_used_when_the_main_file_is_corrupt(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.update_topic_config(TopicConfig("First"))
    manager.update_topic_config(TopicConfig("Second"))  # topics.json.bak now holds First
    path = tmp_path / "config" / "topics.json"
    path.write_bytes(b'{"topicConfigTable": {"Sec')  # torn

    reloaded = _manager(tmp_path)
    reloaded.load()
    assert reloaded.select_topic_config("First") is not None
    assert reloaded.select_topic_config("Second") is None


def test_corrupt_file_without_good_backup_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "config" / "topics.json"
    path.parent.mkdir()
    path.write_bytes(b"not json")
    with pytest.raises(ConfigError, match=r"topics\.json"):
        _manager(tmp_path).load()
    path.with_name("topics.json.bak").write_bytes(b"[1, 2]")
    with pytest.raises(ConfigError, match=r"topics\.json\.bak"):
        _manager(tmp_path).load()


def test_reads_a_topics_json_written_by_rocketmq(tmp_path: Path) -> None:
    path = tmp_path / "config" / "topics.json"
    path.parent.mkdir()
    path.write_text(
        '{"dataVersion":{"counter":7,"timestamp":1690000000000},"topicConfigTable":{'
        '"TopicTest":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
        '"topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}'
    )
    manager = _manager(tmp_path)
    manager.load()
    assert manager.select_topic_config("TopicTest") == TopicConfig("TopicTest", 4, 4, 6)
    assert (manager.data_version.counter, manager.data_version.timestamp) == (7, 1690000000000)


def test_wrapper_is_a_copy_and_carries_a_read_only_broker_perm(tmp_path: Path) -> None:
    manager = _manager(tmp_path, broker_permission=PERM_READ)
    wrapper = manager.build_topic_config_serialize_wrapper()
    assert all(tc.perm == PERM_READ for tc in wrapper.topic_config_table.values())
    live = manager.select_topic_config("SELF_TEST_TOPIC")
    assert live is not None and live.perm == RW
    wrapper.data_version.counter += 5
    assert manager.data_version.counter != wrapper.data_version.counter


def test_update_order_topic_config(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.update_topic_config(TopicConfig("A"))
    manager.update_topic_config(TopicConfig("B", order=True))
    version = manager.data_version.counter
    manager.update_order_topic_config({"A"})
    assert manager.is_order_topic("A") and not manager.is_order_topic("B")
    assert manager.data_version.counter == version + 1
    manager.update_order_topic_config({"A"})
    assert manager.data_version.counter == version + 1


def test_attributes_are_altered_persisted_and_reloaded(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.update_topic_config(TopicConfig("Orders"), {"+message.type": "FIFO"})
    assert manager.topic_message_type("Orders") is TopicMessageType.FIFO
    assert manager.topic_message_type("Missing") is TopicMessageType.UNSPECIFIED
    # A 4.x tool's update (no attributes) keeps them; a refused change leaves the topic be.
    manager.update_topic_config(TopicConfig("Orders", 2, 2))
    with pytest.raises(TopicAttributeError, match="unchangeable"):
        manager.update_topic_config(TopicConfig("Orders", 3, 3), {"+queue.type": "BatchCQ"})
    kept = manager.select_topic_config("Orders")
    assert kept is not None
    assert (kept.write_queue_nums, kept.attributes) == (2, {"message.type": "FIFO"})
    # topics.json holds them as RocketMQ 5 writes them.
    saved = orjson.loads((tmp_path / "config" / "topics.json").read_bytes())
    assert saved["topicConfigTable"]["Orders"]["attributes"] == {"message.type": "FIFO"}

    reloaded = _manager(tmp_path)
    reloaded.load()
    assert reloaded.topic_message_type("Orders") is TopicMessageType.FIFO
    reloaded.update_topic_config(TopicConfig("Orders", 2, 2), {"-message.type": ""})
    assert reloaded.topic_message_type("Orders") is TopicMessageType.NORMAL
