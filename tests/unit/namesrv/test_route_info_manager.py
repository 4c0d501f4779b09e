"""RouteInfoManager: the route tables as RocketMQ 4.9.8 keeps them."""

from __future__ import annotations

from orbitmq.namesrv import (
    BROKER_CHANNEL_EXPIRED_TIME_MS,
    RegisterBrokerResult,
    RouteInfoManager,
)
from orbitmq.protocol import DataVersion, QueueData, TopicConfig, TopicConfigSerializeWrapper
from orbitmq.testing import ManualClock


def wrapper(*configs: TopicConfig, counter: int = 1) -> TopicConfigSerializeWrapper:
    return TopicConfigSerializeWrapper(
        {c.topic_name: c for c in configs}, DataVersion(1_000, counter)
    )


def register(
    manager: RouteInfoManager,
    *configs: TopicConfig,
    name: str = "broker-a",
    addr: str = "10.0.0.1:10911",
    broker_id: int = 0,
    cluster: str = "DefaultCluster",
    counter: int = 1,
    channel: object | None = None,
) -> RegisterBrokerResult:
    return manager.register_broker(
        cluster,
        addr,
        name,
        broker_id,
        addr.replace("10911", "10912"),
        wrapper(*configs, counter=counter),
        [],
        channel,  # type: ignore[arg-type]
    )


def test_register_makes_a_route() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T", 4, 4, 6))
    route = manager.pickup_topic_route_data("T")
    assert route is not None
    assert route.queue_datas == [QueueData("broker-a", 4, 4, 6, 0)]
    assert [(b.cluster, b.broker_name, b.broker_addrs) for b in route.broker_datas] == [
        ("DefaultCluster", "broker-a", {0: "10.0.0.1:10911"})
    ]
    assert route.order_topic_conf is None
    assert route.filter_server_table == {}


def test_unknown_topic_has_no_route() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T"))
    assert manager.pickup_topic_route_data("other") is None


def test_topics_change_only_with_a_new_data_version() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T", 4, 4))
    register(manager, TopicConfig("T", 8, 8), counter=1)  # same version: ignored
    route = manager.pickup_topic_route_data("T")
    assert route is not None and route.queue_datas[0].read_queue_nums == 4
    register(manager, TopicConfig("T", 8, 8), TopicConfig("U"), counter=2)
    route = manager.pickup_topic_route_data("T")
    assert route is not None and route.queue_datas[0].read_queue_nums == 8
    assert manager.get_all_topic_list().topic_list == {"T", "U"}


def test_slave_is_listed_but_does_not_define_topics() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T"))
    result = register(manager, TopicConfig("S"), addr="10.0.0.2:10911", broker_id=1)
    assert result == manager.register_broker(  # the slave learns its master
        "DefaultCluster",
        "10.0.0.2:10911",
        "broker-a",
        1,
        "10.0.0.2:10912",
        wrapper(TopicConfig("S")),
        None,
        None,
    )
    assert result.master_addr == "10.0.0.1:10911"
    assert result.ha_server_addr == "10.0.0.1:10912"
    route = manager.pickup_topic_route_data("T")
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert manager.pickup_topic_route_data("S") is None


def test_master_registers_without_master_addr_in_result() -> None:
    manager = RouteInfoManager(ManualClock(0))
    result = register(manager, TopicConfig("T"))
    assert result.master_addr is None


def test_slave_switched_to_master_keeps_one_id_per_address() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T"), addr="10.0.0.2:10911", broker_id=1)
    register(manager, TopicConfig("T"), addr="10.0.0.2:10911", broker_id=0)
    cluster = manager.get_all_cluster_info()
    assert cluster.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.2:10911"}


def test_unregister_last_address_removes_name_cluster_and_topics() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T"))
    register(manager, TopicConfig("T"), name="broker-b", addr="10.0.0.3:10911")
    manager.unregister_broker("DefaultCluster", "10.0.0.1:10911", "broker-a", 0)
    route = manager.pickup_topic_route_data("T")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    manager.unregister_broker("DefaultCluster", "10.0.0.3:10911", "broker-b", 0)
    assert manager.pickup_topic_route_data("T") is None
    info = manager.get_all_cluster_info()
    assert info.broker_addr_table == {} and info.cluster_addr_table == {}
    assert manager.get_all_topic_list().topic_list == set()


def test_broker_expires_after_120_s_of_silence() -> None:
    clock = ManualClock(1_000_000)
    manager = RouteInfoManager(clock)
    register(manager, TopicConfig("T"))
    clock.advance(BROKER_CHANNEL_EXPIRED_TIME_MS)
    assert manager.scan_not_active_broker() == []
    register(manager, TopicConfig("T"))  # a heartbeat renews it
    clock.advance(BROKER_CHANNEL_EXPIRED_TIME_MS + 1)
    expired = manager.scan_not_active_broker()
    assert len(expired) == 1
    assert manager.pickup_topic_route_data("T") is None
    assert manager.live_broker_addrs() == []
    assert manager.get_all_cluster_info().cluster_addr_table == {}


def test_query_data_version_refreshes_the_broker() -> None:
    clock = ManualClock(0)
    manager = RouteInfoManager(clock)
    register(manager, TopicConfig("T"), counter=3)
    assert not manager.is_broker_topic_config_changed("10.0.0.1:10911", DataVersion(1_000, 3))
    assert manager.is_broker_topic_config_changed("10.0.0.1:10911", DataVersion(1_000, 4))
    clock.advance(100_000)
    manager.update_broker_info_update_timestamp("10.0.0.1:10911")
    clock.advance(100_000)
    assert manager.scan_not_active_broker() == []
    assert manager.query_broker_topic_config("10.0.0.1:10911") == DataVersion(1_000, 3)


def test_channel_destroy_removes_the_broker_registered_over_it() -> None:
    manager = RouteInfoManager(ManualClock(0))
    channel = object()
    register(manager, TopicConfig("T"), channel=channel)
    register(manager, TopicConfig("U"), name="broker-b", addr="10.0.0.3:10911", channel=object())
    manager.on_channel_destroy("127.0.0.1:55555", channel)  # type: ignore[arg-type]
    assert manager.pickup_topic_route_data("T") is None
    assert manager.pickup_topic_route_data("U") is not None
    # An unknown channel and address change nothing.
    manager.on_channel_destroy("127.0.0.1:1", object())  # type: ignore[arg-type]
    assert manager.live_broker_addrs() == ["10.0.0.3:10911"]


def test_cluster_info_and_topic_queries() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T"), TopicConfig("UNIT", topic_sys_flag=1))
    register(manager, TopicConfig("V"), name="broker-c", addr="10.0.0.4:10911", cluster="C2")
    info = manager.get_all_cluster_info()
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a"}, "C2": {"broker-c"}}
    assert info.broker_addr_table["broker-c"].broker_addrs == {0: "10.0.0.4:10911"}
    assert manager.get_topics_by_cluster("C2").topic_list == {"V"}
    assert manager.get_topics_by_cluster("nope").topic_list == set()
    assert manager.get_unit_topics().topic_list == {"UNIT"}
    system = manager.get_system_topic_list()
    assert system.topic_list == {"DefaultCluster", "broker-a", "C2", "broker-c"}
    assert system.broker_addr in {"10.0.0.1:10911", "10.0.0.4:10911"}


def test_write_perm_and_delete_topic() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T", perm=6), TopicConfig("U", perm=6))
    assert manager.wipe_write_perm_of_broker("broker-a") == 2
    route = manager.pickup_topic_route_data("T")
    assert route is not None and route.queue_datas[0].perm == 4
    assert manager.add_write_perm_of_broker("broker-a") == 2
    route = manager.pickup_topic_route_data("T")
    assert route is not None and route.queue_datas[0].perm == 6
    manager.delete_topic("T", "DefaultCluster")
    manager.delete_topic("U")
    assert manager.get_all_topic_list().topic_list == set()


def test_results_are_copies() -> None:
    manager = RouteInfoManager(ManualClock(0))
    register(manager, TopicConfig("T"))
    route = manager.pickup_topic_route_data("T")
    assert route is not None
    route.broker_datas[0].broker_addrs[5] = "x"
    route.queue_datas[0].perm = 0
    again = manager.pickup_topic_route_data("T")
    assert again is not None and again.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911"}
    assert again.queue_datas[0].perm == 6
