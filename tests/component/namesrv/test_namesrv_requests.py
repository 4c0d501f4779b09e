"""A name server on a real socket, driven by a RemotingClient as brokers and tools drive it."""

from __future__ import annotations

import asyncio

import orjson

from orbitmq.protocol import (
    NAMESPACE_ORDER_TOPIC_CONFIG,
    ClusterInfo,
    KVTable,
    RegisterBrokerResponseHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicConfig,
    TopicList,
    TopicRouteData,
)
from orbitmq.remoting import RemotingClient
from orbitmq.testing import ManualClock
from tests.component.namesrv.conftest import CloseWatcher, ControllerFactory
from tests.component.namesrv.support import register_request, route_request

TIMEOUT_S = 3.0


async def test_register_then_route(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    response = await client.invoke(
        namesrv.address, register_request(TopicConfig("TopicA", 4, 4, 6)), TIMEOUT_S
    )
    assert response.code == ResponseCode.SUCCESS and response.remark is None
    header = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
    assert header.master_addr is None and header.ha_server_addr is None
    assert response.body == b""  # no order-topic namespace yet, as RocketMQ answers

    response = await client.invoke(namesrv.address, route_request("TopicA"), TIMEOUT_S)
    assert response.code == ResponseCode.SUCCESS
    route = TopicRouteData.from_json(response.body)
    assert [(q.broker_name, q.read_queue_nums, q.perm) for q in route.queue_datas] == [
        ("broker-a", 4, 6)
    ]
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911"}
    assert route.order_topic_conf is None
    # Standard JSON: quoted integer keys.
    assert orjson.loads(response.body)["brokerDatas"][0]["brokerAddrs"] == {"0": "127.0.0.1:10911"}


async def test_compressed_register_body(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    request = register_request(TopicConfig("TopicZ", 2, 2), compressed=True)
    response = await client.invoke(namesrv.address, request, TIMEOUT_S)
    assert response.code == ResponseCode.SUCCESS
    route = await client.invoke(namesrv.address, route_request("TopicZ"), TIMEOUT_S)
    assert route.code == ResponseCode.SUCCESS


async def test_bad_crc32_is_refused(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    request = register_request(TopicConfig("TopicA"))
    request.ext_fields["bodyCrc32"] = "12345"
    response = await client.invoke(namesrv.address, request, TIMEOUT_S)
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert namesrv.route_info_manager.live_broker_addrs() == []


async def test_unknown_topic_is_topic_not_exist(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    response = await client.invoke(namesrv.address, route_request("Nope"), TIMEOUT_S)
    assert response.code == ResponseCode.TOPIC_NOT_EXIST.value == 17
    assert response.remark == (
        "No topic route info in name server for the topic: Nope\n"
        "See http://rocketmq.apache.org/docs/faq/ for further details."
    )


async def test_cluster_info_and_topic_list(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    await client.invoke(
        namesrv.address, register_request(TopicConfig("A"), TopicConfig("B")), TIMEOUT_S
    )
    await client.invoke(
        namesrv.address,
        register_request(TopicConfig("C"), broker_name="broker-b", broker_addr="127.0.0.2:10911"),
        TIMEOUT_S,
    )
    info_response = await client.invoke(
        namesrv.address, RemotingCommand.create_request(RequestCode.GET_BROKER_CLUSTER_INFO), 3
    )
    info = ClusterInfo.from_json(info_response.body)
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a", "broker-b"}}
    assert info.broker_addr_table["broker-b"].broker_addrs == {0: "127.0.0.2:10911"}

    list_response = await client.invoke(
        namesrv.address,
        RemotingCommand.create_request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER),
        TIMEOUT_S,
    )
    assert TopicList.from_json(list_response.body).topic_list == {"A", "B", "C"}

    by_cluster = await client.invoke(
        namesrv.address,
        RemotingCommand.create_request(
            RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}
        ),
        TIMEOUT_S,
    )
    assert TopicList.from_json(by_cluster.body).topic_list == {"A", "B", "C"}


async def test_unregister_broker(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    await client.invoke(namesrv.address, register_request(TopicConfig("A")), TIMEOUT_S)
    request = RemotingCommand.create_request(
        RequestCode.UNREGISTER_BROKER,
        {
            "brokerName": "broker-a",
            "brokerAddr": "127.0.0.1:10911",
            "clusterName": "DefaultCluster",
            "brokerId": "0",
        },
    )
    response = await client.invoke(namesrv.address, request, TIMEOUT_S)
    assert response.code == ResponseCode.SUCCESS
    route = await client.invoke(namesrv.address, route_request("A"), TIMEOUT_S)
    assert route.code == ResponseCode.TOPIC_NOT_EXIST


async def test_slave_gets_master_addresses_and_order_topics(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory(order_message_enable=True)
    await client.invoke(namesrv.address, register_request(TopicConfig("A")), TIMEOUT_S)
    put = RemotingCommand.create_request(
        RequestCode.PUT_KV_CONFIG,
        {"namespace": NAMESPACE_ORDER_TOPIC_CONFIG, "key": "A", "value": "broker-a:4"},
    )
    assert (await client.invoke(namesrv.address, put, TIMEOUT_S)).code == ResponseCode.SUCCESS
    slave = register_request(TopicConfig("A"), broker_addr="127.0.0.3:10911", broker_id=1)
    response = await client.invoke(namesrv.address, slave, TIMEOUT_S)
    header = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
    assert header.master_addr == "127.0.0.1:10911"
    assert header.ha_server_addr == "127.0.0.1:10912"
    assert KVTable.from_json(response.body).table == {"A": "broker-a:4"}
    route = TopicRouteData.from_json(
        (await client.invoke(namesrv.address, route_request("A"), TIMEOUT_S)).body
    )
    assert route.order_topic_conf == "broker-a:4"
    assert route.broker_datas[0].broker_addrs == {0: "127.0.0.1:10911", 1: "127.0.0.3:10911"}


async def test_kv_config_round_trip(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    key = {"namespace": "NS", "key": "k"}
    await client.invoke(
        namesrv.address,
        RemotingCommand.create_request(RequestCode.PUT_KV_CONFIG, {**key, "value": "v"}),
        TIMEOUT_S,
    )
    got = await client.invoke(
        namesrv.address, RemotingCommand.create_request(RequestCode.GET_KV_CONFIG, key), 3
    )
    assert (got.code, got.ext_fields.get("value")) == (ResponseCode.SUCCESS, "v")
    await client.invoke(
        namesrv.address, RemotingCommand.create_request(RequestCode.DELETE_KV_CONFIG, key), 3
    )
    gone = await client.invoke(
        namesrv.address, RemotingCommand.create_request(RequestCode.GET_KV_CONFIG, key), 3
    )
    assert gone.code == ResponseCode.QUERY_NOT_FOUND
    assert gone.remark == "No config item, Namespace: NS Key: k"


async def test_name_servers_are_independent(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    first = await controller_factory()
    second = await controller_factory()
    await client.invoke(first.address, register_request(TopicConfig("OnlyFirst")), TIMEOUT_S)
    assert (await client.invoke(first.address, route_request("OnlyFirst"), 3)).code == 0
    assert (
        await client.invoke(second.address, route_request("OnlyFirst"), TIMEOUT_S)
    ).code == ResponseCode.TOPIC_NOT_EXIST


async def test_closed_broker_connection_removes_the_broker(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    watcher = CloseWatcher()
    namesrv = await controller_factory(watcher=watcher)
    broker = RemotingClient(connect_timeout_s=2.0)
    await broker.invoke(namesrv.address, register_request(TopicConfig("A")), TIMEOUT_S)
    assert (await client.invoke(namesrv.address, route_request("A"), TIMEOUT_S)).code == 0
    await broker.close()
    await _closed(watcher, 1)
    assert (
        await client.invoke(namesrv.address, route_request("A"), TIMEOUT_S)
    ).code == ResponseCode.TOPIC_NOT_EXIST


async def test_silent_broker_expires_and_its_connection_closes(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    clock = ManualClock(1_000_000)
    watcher = CloseWatcher()
    namesrv = await controller_factory(clock, watcher)
    await client.invoke(namesrv.address, register_request(TopicConfig("A")), TIMEOUT_S)
    clock.advance(120_000)
    assert namesrv.scan_not_active_broker() == 0
    clock.advance(1)
    assert namesrv.scan_not_active_broker() == 1
    await _closed(watcher, 1)
    assert namesrv.route_info_manager.get_all_topic_list().topic_list == set()


async def test_unsupported_code_is_answered_by_remoting(
    controller_factory: ControllerFactory, client: RemotingClient
) -> None:
    namesrv = await controller_factory()
    response = await client.invoke(
        namesrv.address, RemotingCommand.create_request(RequestCode.SEND_MESSAGE), TIMEOUT_S
    )
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 10 not supported"


async def test_registration_table_is_visible(controller_factory: ControllerFactory) -> None:
    namesrv = await controller_factory()
    table = namesrv.remoting_server.table.registrations
    assert {code for code, _ in namesrv.registrations} == set(table)
    for code in (103, 104, 105, 106, 206):
        assert code in table


async def _closed(watcher: CloseWatcher, count: int) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        for _ in range(count):
            await watcher.closed.get()
