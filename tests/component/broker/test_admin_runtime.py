"""The broker-wide admin requests against a real BrokerController over sockets:
UPDATE_BROKER_CONFIG (25) / GET_BROKER_CONFIG (26) with the broker's ``-c`` file,
GET_BROKER_RUNTIME_INFO (28), VIEW_BROKER_STATS_DATA (315), GET_BROKER_CONSUME_STATS (317),
CLEAN_EXPIRED_CONSUMEQUEUE (306) and QUERY_CONSUME_QUEUE (321); and the AdminClient methods
over them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest

from orbitmq.broker import BrokerController, load_broker_config
from orbitmq.client import AdminClient
from orbitmq.common import MessageQueue, java_string_hash
from orbitmq.common.java_properties import parse_properties
from orbitmq.protocol import (
    BrokerStatsData,
    ConsumerData,
    ConsumeStatsList,
    ConsumeType,
    HeartbeatData,
    KVTable,
    MessageModel,
    QueryConsumeQueueResponseBody,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SubscriptionData,
)
from orbitmq.protocol.header import (
    GetBrokerConfigResponseHeader,
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import (
    pull_all,
    pull_request,
    send,
    send_header,
    send_request,
    sent_header,
)

#: The keys RocketMQ 4.9.8's brokerStatus shows (prepareRuntimeInfo, DefaultMessageStore and
#: StoreStatsService getRuntimeInfo), besides commitLogDiskRatio_<path> and
#: scheduleMessageOffset_<level>.
ROCKETMQ_RUNTIME_KEYS = frozenset(
    {
        "bootTimestamp",
        "runtime",
        "putMessageEntireTimeMax",
        "putMessageTimesTotal",
        "putMessageFailedTimes",
        "putMessageSizeTotal",
        "putMessageDistributeTime",
        "putMessageAverageSize",
        "dispatchMaxBuffer",
        "getMessageEntireTimeMax",
        "putTps",
        "getFoundTps",
        "getMissTps",
        "getTotalTps",
        "getTransferedTps",
        "putLatency99",
        "putLatency999",
        "commitLogDiskRatio",
        "consumeQueueDiskRatio",
        "commitLogMinOffset",
        "commitLogMaxOffset",
        "brokerVersionDesc",
        "brokerVersion",
        "msgPutTotalYesterdayMorning",
        "msgPutTotalTodayMorning",
        "msgPutTotalTodayNow",
        "msgGetTotalYesterdayMorning",
        "msgGetTotalTodayMorning",
        "msgGetTotalTodayNow",
        "sendThreadPoolQueueSize",
        "sendThreadPoolQueueCapacity",
        "pullThreadPoolQueueSize",
        "pullThreadPoolQueueCapacity",
        "queryThreadPoolQueueSize",
        "queryThreadPoolQueueCapacity",
        "EndTransactionQueueSize",
        "EndTransactionThreadPoolQueueCapacity",
        "dispatchBehindBytes",
        "pageCacheLockTimeMills",
        "sendThreadPoolQueueHeadWaitTimeMills",
        "pullThreadPoolQueueHeadWaitTimeMills",
        "queryThreadPoolQueueHeadWaitTimeMills",
        "earliestMessageTimeStamp",
        "startAcceptSendRequestTimeStamp",
        "remainTransientStoreBufferNumbs",
        "remainHowManyDataToFlush",
        "commitLogDirCapacity",
    }
)


async def call(
    client: RemotingClient,
    broker: BrokerController,
    code: int,
    fields: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    return await send(client, broker, RemotingCommand.create_request(code, fields or {}, body))


async def send_messages(
    client: RemotingClient, broker: BrokerController, topic: str, tags: list[str]
) -> None:
    for tag in tags:
        request = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header(topic, {"TAGS": tag}), tag.encode() * 10
        )
        sent_header(await send(client, broker, request))


def write_broker_conf(path: Path, store: Path) -> None:
    path.write_text(
        "# written by the test\n"
        "brokerClusterName=DefaultCluster\n"
        "brokerName=broker-a\n"
        "brokerIP1=127.0.0.1\n"
        f"storePathRootDir={store}\n"
        "mappedFileSizeCommitLog=262144\n"
        "mappedFileSizeConsumeQueue=20000\n"
        "maxHashSlotNum=1000\n"
        "maxIndexNum=4000\n"
        "fileReservedTime=72\n"
    )


async def start_from_conf(conf: Path) -> BrokerController:
    startup = load_broker_config(conf, environ={})
    startup.broker.listen_port = 0
    controller = BrokerController(startup.broker, startup.store, config_path=str(conf))
    await controller.start()
    return controller


async def get_config(client: RemotingClient, broker: BrokerController) -> dict[str, str]:
    response = await call(client, broker, RequestCode.GET_BROKER_CONFIG)
    assert response.code == ResponseCode.SUCCESS
    return parse_properties(bytes(response.body or b"").decode())


async def test_a_config_change_over_the_wire_is_applied_and_survives_a_restart(
    tmp_path: Path, client: RemotingClient
) -> None:
    conf = tmp_path / "broker.conf"
    write_broker_conf(conf, tmp_path / "store")
    broker = await start_from_conf(conf)
    try:
        response = await call(client, broker, RequestCode.GET_BROKER_CONFIG)
        version = orjson.loads(
            GetBrokerConfigResponseHeader.from_ext_fields(response.ext_fields).version
        )
        assert version["counter"] == 0 and version["timestamp"] > 0
        before = parse_properties(bytes(response.body or b"").decode())
        assert (before["brokerName"], before["fileReservedTime"]) == ("broker-a", "72")
        assert before["brokerPermission"] == "6"
        assert before["checkCRCOnRecover"] == "true"

        body = b"fileReservedTime=12\nbrokerPermission=2\n"
        updated = await call(client, broker, RequestCode.UPDATE_BROKER_CONFIG, body=body)
        assert (updated.code, updated.remark) == (ResponseCode.SUCCESS, None)
        after = await get_config(client, broker)
        assert (after["fileReservedTime"], after["brokerPermission"]) == ("12", "2")
        version_after = await call(client, broker, RequestCode.GET_BROKER_CONFIG)
        header = GetBrokerConfigResponseHeader.from_ext_fields(version_after.ext_fields)
        assert orjson.loads(header.version)["counter"] == 1
        # Applied: a broker that may not be read answers pulls NO_PERMISSION at once.
        pulled = await send(client, broker, pull_request("AnyTopic"))
        assert pulled.code == ResponseCode.NO_PERMISSION
        assert broker.store_config.file_reserved_time == 12
    finally:
        await broker.stop()

    text = conf.read_text()
    assert text.startswith("# written by the test\n")
    assert "fileReservedTime=12\n" in text and "brokerPermission=2\n" in text
    restarted = await start_from_conf(conf)
    try:
        again = await get_config(client, restarted)
        assert (again["fileReservedTime"], again["brokerPermission"]) == ("12", "2")
    finally:
        await restarted.stop()


@pytest.mark.parametrize(
    ("body", "code", "remark"),
    [
        (b"brokerConfigPath=/tmp/x\n", ResponseCode.NO_PERMISSION, "in black list"),
        (b"rocketmqHome=/opt\n", ResponseCode.NO_PERMISSION, "in black list"),
        (b"configBlackList=\nfileReservedTime=1\n", ResponseCode.NO_PERMISSION, "in black list"),
        (b"fileReservedTime=soon\n", ResponseCode.SYSTEM_ERROR, "fileReservedTime"),
        (b"diskMaxUsedSpaceRatio=99\n", ResponseCode.SYSTEM_ERROR, "diskMaxUsedSpaceRatio"),
    ],
)
async def test_refused_updates_change_nothing(
    tmp_path: Path, client: RemotingClient, body: bytes, code: int, remark: str
) -> None:
    conf = tmp_path / "broker.conf"
    write_broker_conf(conf, tmp_path / "store")
    original = conf.read_text()
    broker = await start_from_conf(conf)
    try:
        response = await call(client, broker, RequestCode.UPDATE_BROKER_CONFIG, body=body)
        assert response.code == code
        assert remark in (response.remark or "")
        assert (await get_config(client, broker))["fileReservedTime"] == "72"
    finally:
        await broker.stop()
    assert conf.read_text() == original


async def test_keys_read_at_start_are_saved_for_the_next_start(
    tmp_path: Path, client: RemotingClient
) -> None:
    conf = tmp_path / "broker.conf"
    write_broker_conf(conf, tmp_path / "store")
    broker = await start_from_conf(conf)
    try:
        response = await call(
            client, broker, RequestCode.UPDATE_BROKER_CONFIG, body=b"brokerName=broker-b\n"
        )
        assert response.code == ResponseCode.SUCCESS
        assert response.remark == "saved; takes effect at the next start: brokerName"
        assert (await get_config(client, broker))["brokerName"] == "broker-a"
    finally:
        await broker.stop()
    assert load_broker_config(conf, environ={}).broker.broker_name == "broker-b"


async def test_runtime_info_has_rocketmqs_keys_with_real_values(
    broker: BrokerController, client: RemotingClient
) -> None:
    broker.store_stats_service.sampling()
    await send_messages(client, broker, "RuntimeTopic", ["a", "b", "c"])
    pulled = await pull_all(client, broker, "RuntimeTopic", 3)
    broker.store_stats_service.sampling()
    response = await call(client, broker, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert response.code == ResponseCode.SUCCESS
    info = KVTable.from_json(response.body).table

    assert set(info) >= ROCKETMQ_RUNTIME_KEYS
    store = broker.message_store
    assert f"commitLogDiskRatio_{store.config.commit_log_dir}" in info
    assert {f"scheduleMessageOffset_{level}" for level in range(1, 19)} <= set(info)
    assert info["msgPutTotalTodayNow"] == info["putMessageTimesTotal"] == "3"
    assert info["msgGetTotalTodayNow"] == "3"
    assert info["putMessageSizeTotal"] == str(store.max_phy_offset)  # only these 3 stored
    assert info["commitLogMinOffset"] == "0"
    assert info["commitLogMaxOffset"] == str(store.max_phy_offset)
    assert info["earliestMessageTimeStamp"] == str(pulled[0].store_timestamp)
    assert info["putMessageFailedTimes"] == "0"
    assert info["brokerVersionDesc"] == "V4_9_8"
    assert info["sendThreadPoolQueueCapacity"] == "10000"
    assert re.fullmatch(r"\[ 0 days, 0 hours, \d+ minutes, \d+ seconds \]", info["runtime"])
    assert re.fullmatch(r"Total : .+, Free : .+\.", info["commitLogDirCapacity"])
    put_tps = [float(rate) for rate in info["putTps"].split(" ")]
    assert len(put_tps) == 3 and put_tps[0] > 0
    assert 0.0 <= float(info["commitLogDiskRatio"]) <= 1.0
    assert sum(int(n) for n in re.findall(r":(\d+)", info["putMessageDistributeTime"])) == 3


async def test_view_broker_stats_data_reads_the_counters_of_sends_and_pulls(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send_messages(client, broker, "StatsAllTopic", ["a", "b"])
    await pull_all(client, broker, "StatsAllTopic", 2)  # group "cg"
    broker.broker_stats_manager.sampling_in_seconds()

    async def minute(name: str, key: str) -> tuple[int, float]:
        fields = ViewBrokerStatsDataRequestHeader(stats_name=name, stats_key=key).to_ext_fields()
        response = await call(client, broker, RequestCode.VIEW_BROKER_STATS_DATA, fields)
        assert response.code == ResponseCode.SUCCESS, response.remark
        data = BrokerStatsData.from_json(response.body)
        return data.stats_minute.sum, data.stats_minute.avgpt

    assert await minute("TOPIC_PUT_NUMS", "StatsAllTopic") == (2, 1.0)
    put_size, size_per_send = await minute("TOPIC_PUT_SIZE", "StatsAllTopic")
    assert put_size == broker.message_store.max_phy_offset and size_per_send == put_size / 2
    assert (await minute("GROUP_GET_NUMS", "StatsAllTopic@cg"))[0] == 2
    assert (await minute("BROKER_PUT_NUMS", "DefaultCluster"))[0] == 2
    assert (await minute("BROKER_GET_NUMS", "DefaultCluster"))[0] == 2

    fields = ViewBrokerStatsDataRequestHeader(
        stats_name="TOPIC_PUT_NUMS", stats_key="Nope"
    ).to_ext_fields()
    missing = await call(client, broker, RequestCode.VIEW_BROKER_STATS_DATA, fields)
    assert (missing.code, missing.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The stats <TOPIC_PUT_NUMS> <Nope> not exist",
    )


async def test_broker_consume_stats_sums_every_groups_lag(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send_messages(client, broker, "LagTopic", ["a"] * 5)
    await pull_all(client, broker, "LagTopic", 5)  # creates subscription group "cg"
    broker.consumer_offset_manager.commit_offset("test", "cg", "LagTopic", 0, 2)

    fields = GetConsumeStatsInBrokerHeader(is_order=False).to_ext_fields()
    response = await call(client, broker, RequestCode.GET_BROKER_CONSUME_STATS, fields)
    stats = ConsumeStatsList.from_json(response.body)
    assert stats.broker_addr == broker.address
    assert stats.total_diff == 3
    (entry,) = [e for e in stats.consume_stats_list if "cg" in e]
    (lag_topic,) = entry["cg"]
    wrapper = lag_topic.offset_table[MessageQueue("LagTopic", "broker-a", 0)]
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (5, 2)
    assert wrapper.last_timestamp == broker.message_store.get_message_store_timestamp(
        "LagTopic", 0, 1
    )
    assert len(lag_topic.offset_table) == 4  # every write queue of the auto-created topic

    fields = GetConsumeStatsInBrokerHeader(is_order=True).to_ext_fields()
    orders = ConsumeStatsList.from_json(
        (await call(client, broker, RequestCode.GET_BROKER_CONSUME_STATS, fields)).body
    )
    assert orders.total_diff == 0
    assert [e for e in orders.consume_stats_list if "cg" in e] == [{"cg": []}]


def heartbeat(group: str, topic: str, tag: str) -> RemotingCommand:
    data = HeartbeatData(
        client_id="127.0.0.1@cq",
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                subscription_data_set=[
                    SubscriptionData(
                        topic=topic,
                        sub_string=tag,
                        tags_set={tag},
                        code_set={java_string_hash(tag)},
                    )
                ],
            )
        ],
    )
    return RemotingCommand.create_request(RequestCode.HEART_BEAT, body=data.to_json())


async def query_cq(
    client: RemotingClient, broker: BrokerController, **fields: object
) -> RemotingCommand:
    values: dict[str, object] = {
        "topic": "CqTopic",
        "queue_id": 0,
        "index": 0,
        "count": 10,
        "consumer_group": None,
    }
    values.update(fields)
    header = QueryConsumeQueueRequestHeader(**values)  # type: ignore[arg-type]
    return await call(client, broker, RequestCode.QUERY_CONSUME_QUEUE, header.to_ext_fields())


async def test_query_consume_queue_shows_the_units_and_the_groups_filter(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send_messages(client, broker, "CqTopic", ["TagA", "TagB", "TagA"])
    assert broker.message_store.wait_for_dispatch(5)
    assert (await send(client, broker, heartbeat("cq_group", "CqTopic", "TagA"))).code == 0
    store = broker.message_store

    response = await query_cq(client, broker, index=0, count=2, consumer_group="cq_group")
    assert response.code == ResponseCode.SUCCESS, response.remark
    body = QueryConsumeQueueResponseBody.from_json(response.body)
    assert (body.min_queue_index, body.max_queue_index) == (0, 3)
    assert body.queue_data is not None
    assert [u.physic_offset for u in body.queue_data] == [
        store.get_commit_log_offset_in_queue("CqTopic", 0, i) for i in range(2)
    ]
    assert [u.tags_code for u in body.queue_data] == [
        java_string_hash("TagA"),
        java_string_hash("TagB"),
    ]
    assert [u.eval for u in body.queue_data] == [True, False]
    assert all(u.physic_size > 0 for u in body.queue_data)
    assert body.subscription_data is not None and body.subscription_data.sub_string == "TagA"
    assert body.filter_data == "null"  # a TAG subscription has no SQL92 filter

    offline = QueryConsumeQueueResponseBody.from_json(
        (await query_cq(client, broker, index=2, consumer_group="gone")).body
    )
    assert offline.filter_data == "gone@CqTopic is not online!"
    assert offline.queue_data is not None and len(offline.queue_data) == 1

    past = await query_cq(client, broker, index=10)
    assert (past.code, past.remark) == (ResponseCode.SUCCESS, "Index 10 of 0@CqTopic is not exist!")
    assert QueryConsumeQueueResponseBody.from_json(past.body).max_queue_index == 3
    missing = await query_cq(client, broker, topic="Nope")
    assert (missing.code, missing.remark) == (ResponseCode.SYSTEM_ERROR, "0@Nope is not exist!")


async def test_clean_expired_consume_queue_keeps_live_queues(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send_messages(client, broker, "LiveTopic", ["a"])
    assert broker.message_store.wait_for_dispatch(5)
    response = await call(client, broker, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    assert response.code == ResponseCode.SUCCESS
    assert broker.message_store.find_consume_queue("LiveTopic", 0) is not None


@pytest.fixture
async def admin() -> AsyncIterator[AdminClient]:
    # The broker is named by address: no name server is asked.
    async with AdminClient(namesrv_addr="127.0.0.1:1") as client:
        yield client


async def test_admin_client_methods(
    broker: BrokerController, client: RemotingClient, admin: AdminClient
) -> None:
    addr = broker.address
    await send_messages(client, broker, "AdminTopic", ["TagA", "TagB"])
    messages = await pull_all(client, broker, "AdminTopic", 2)
    broker.broker_stats_manager.sampling_in_seconds()

    assert (await admin.broker_config(addr))["brokerName"] == "broker-a"
    assert await admin.update_broker_config(addr, {"fileReservedTime": "24"}) is None
    assert (await admin.broker_config(addr))["fileReservedTime"] == "24"
    assert (await admin.broker_runtime_info(addr))["msgPutTotalTodayNow"] == "2"
    stats = await admin.view_stats(addr, "GROUP_GET_NUMS", "AdminTopic@cg")
    assert stats.stats_minute.sum == 2
    broker.consumer_offset_manager.commit_offset("test", "cg", "AdminTopic", 0, 1)
    assert (await admin.broker_consume_stats(addr)).total_diff == 1
    assert await admin.clean_expired_cq(addr) is True
    body = await admin.query_cq(addr, "AdminTopic", 0, 1, count=5)
    assert body.queue_data is not None
    assert [u.physic_offset for u in body.queue_data] == [messages[1].commit_log_offset]


async def test_a_permission_change_registers_the_broker_again(
    broker: BrokerController, client: RemotingClient
) -> None:
    """RocketMQ bumps the topic table's version and calls registerBrokerAll, so the name
    servers' routes show the new permission at once."""
    calls: list[str] = []
    broker.admin_runtime_processor.on_permission_changed = lambda: calls.append("register")
    version = broker.topic_config_manager.data_version.counter
    body = b"fileReservedTime=10\n"
    assert (await call(client, broker, RequestCode.UPDATE_BROKER_CONFIG, body=body)).code == 0
    assert calls == []
    body = b"brokerPermission=4\n"
    assert (await call(client, broker, RequestCode.UPDATE_BROKER_CONFIG, body=body)).code == 0
    assert calls == ["register"]
    assert broker.topic_config_manager.data_version.counter == version + 1
    assert broker.broker_config.broker_permission == 4
