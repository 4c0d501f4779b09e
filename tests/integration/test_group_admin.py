"""The AdminClient's group, connection and name server operations (mqadmin updateSubGroup,
deleteSubGroup, consumerConnection, producerConnection, consumerStatus, consumeMessage,
queryMsgById's track, getNamesrvConfig, updateNamesrvConfig, wipeWritePerm, addWritePerm,
updateKvConfig, deleteKvConfig) against an in-process cluster, with real clients answering
the requests the broker relays to them."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from orbitmq.client import (
    ConsumeContext,
    LitePullConsumer,
    MQBrokerError,
    NoRouteError,
    Producer,
    PushConsumer,
)
from orbitmq.client.admin_client import AdminClient
from orbitmq.client.consumer_config import Listener
from orbitmq.client.group_admin import ConsumerNotOnlineError, TrackType
from orbitmq.common import Message, MessageExt
from orbitmq.common.topic import dlq_topic, retry_topic
from orbitmq.namesrv import load_namesrv_config
from orbitmq.protocol import (
    CMResult,
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    ResponseCode,
    SubscriptionGroupConfig,
)
from orbitmq.protocol.body.consumer_running import (
    PROP_CONSUME_TYPE,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_NAMESERVER_ADDR,
)
from orbitmq.protocol.perm_name import PERM_WRITE
from orbitmq.sync import AdminClient as SyncAdminClient
from orbitmq.testing import InProcessCluster, ThreadedCluster
from tests.eventually import eventually_async

WAIT_S = 10.0


@pytest.fixture
async def admin(cluster: InProcessCluster) -> AsyncIterator[AdminClient]:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as client:
        yield client


def tagged(topic: str, body: bytes, tags: str) -> Message:
    msg = Message(topic, body)
    msg.tags = tags
    return msg


class Recorder:
    """Keeps every message its listener was given; the listener raises for tag ``boom``."""

    def __init__(self) -> None:
        self.seen: list[MessageExt] = []

    def listener(self) -> Listener:
        async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
            self.seen.extend(messages)
            if any(m.tags == "boom" for m in messages):
                raise RuntimeError("listener failed on purpose")

        return on_messages


@pytest.fixture
async def consumer(
    cluster: InProcessCluster, admin: AdminClient
) -> AsyncIterator[tuple[PushConsumer, Recorder]]:
    await admin.create_topic("GroupTopic", queue_nums=2)
    recorder = Recorder()
    push = PushConsumer("admin_cg", namesrv_addr=cluster.namesrv_addr)
    push.subscribe("GroupTopic", "TagA || TagB")
    push.register_listener(recorder.listener())
    await push.start()
    yield push, recorder
    await push.shutdown()


async def test_update_subscription_group_reaches_every_master(
    two_brokers: InProcessCluster,
) -> None:
    config = SubscriptionGroupConfig(group_name="sub_g", retry_queue_nums=3, retry_max_times=5)
    async with AdminClient(namesrv_addr=two_brokers.namesrv_addr) as admin:
        updated = await admin.update_subscription_group(config)

    assert sorted(updated) == sorted(b.address for b in two_brokers.brokers)
    for broker in two_brokers.brokers:
        assert broker.subscription_group_manager.get("sub_g") == config


async def test_delete_subscription_group_also_deletes_its_retry_and_dlq_topics(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    await admin.update_subscription_group(SubscriptionGroupConfig(group_name="gone_g"))
    for topic in (retry_topic("gone_g"), dlq_topic("gone_g")):
        await admin.create_topic(topic, queue_nums=1)
    broker = cluster.brokers[0]

    await admin.delete_subscription_group("gone_g", remove_offset=True)

    assert broker.subscription_group_manager.get("gone_g") is None
    for topic in (retry_topic("gone_g"), dlq_topic("gone_g")):
        assert broker.topic_config_manager.select_topic_config(topic) is None
        with pytest.raises(NoRouteError):
            await admin.topic_route(topic)


async def test_consumer_and_producer_connections(
    cluster: InProcessCluster,
    admin: AdminClient,
    consumer: tuple[PushConsumer, Recorder],
) -> None:
    push, _ = consumer
    async with Producer("admin_pg", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(tagged("GroupTopic", b"p", "TagA"))
        # The periodic heartbeat, now: it registers the producer at the broker it sent to.
        await producer.instance.send_heartbeat_to_all_brokers()
        connection = await admin.consumer_connection("admin_cg")
        producers = await admin.producer_connection("admin_pg", "GroupTopic")
        producer_id = producer.instance.client_id

    [client] = connection.connection_set
    assert client.client_id == push.instance.client_id
    assert client.version == 409  # V4_9_8, what our requests carry
    assert connection.consume_type is ConsumeType.CONSUME_PASSIVELY
    assert connection.message_model is MessageModel.CLUSTERING
    assert connection.consume_from_where is ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    assert connection.subscription_table["GroupTopic"].tags_set == {"TagA", "TagB"}
    assert [c.client_id for c in producers.connection_set] == [producer_id]
    assert "admin_cg" in await admin.query_topic_consume_by_who("GroupTopic")
    with pytest.raises(ConsumerNotOnlineError):
        await admin.consumer_connection("never_started_cg")


async def test_consumer_running_info_is_answered_by_the_client(
    cluster: InProcessCluster,
    admin: AdminClient,
    consumer: tuple[PushConsumer, Recorder],
) -> None:
    push, recorder = consumer
    async with Producer("admin_pg", namesrv_addr=cluster.namesrv_addr) as producer:
        await producer.send(tagged("GroupTopic", b"r", "TagA"))
    await eventually_async(lambda: recorder.seen, WAIT_S)

    info = await admin.consumer_running_info("admin_cg", push.instance.client_id, jstack=True)

    assert info.properties[PROP_CONSUME_TYPE] == "CONSUME_PASSIVELY"
    assert info.properties[PROP_NAMESERVER_ADDR] == f"{cluster.namesrv_addr};"
    assert info.properties["consumerGroup"] == "admin_cg"
    assert {s.topic for s in info.subscription_set} == {"GroupTopic", retry_topic("admin_cg")}
    held = {mq.topic for mq in info.mq_table}
    assert held == {"GroupTopic", retry_topic("admin_cg")}
    assert sum(q.commit_offset for mq, q in info.mq_table.items() if mq.topic == "GroupTopic") == 1
    assert set(info.status_table) == {"GroupTopic", retry_topic("admin_cg")}
    assert info.jstack
    with pytest.raises(MQBrokerError) as caught:
        await admin.consumer_running_info("admin_cg", "127.0.0.9@nobody")
    assert caught.value.code == ResponseCode.SYSTEM_ERROR


async def test_a_lite_pull_consumer_answers_its_running_info_too(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    """RocketMQ's lite pull consumer is an MQConsumerInner too: mqadmin consumerStatus
    reaches it, and it reports the queues it holds with their committed offsets."""
    await admin.create_topic("LiteInfoTopic", queue_nums=2)
    async with Producer("admin_pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for i in range(4):
            await producer.send(Message("LiteInfoTopic", b"m%d" % i))
    lite = LitePullConsumer("lite_info_cg", namesrv_addr=cluster.namesrv_addr)
    lite.subscribe("LiteInfoTopic")
    async with lite:
        polled: list[MessageExt] = []
        while len(polled) < 4:
            polled += await lite.poll(timeout_s=WAIT_S)
        await lite.commit_sync()
        info = await admin.consumer_running_info("lite_info_cg", lite.instance.client_id)
    assert info.properties[PROP_CONSUME_TYPE] == "CONSUME_ACTIVELY"
    assert info.properties["consumerGroup"] == "lite_info_cg"
    assert int(info.properties[PROP_CONSUMER_START_TIMESTAMP]) > 0
    assert {mq.topic for mq in info.mq_table} == {"LiteInfoTopic"}
    assert sum(q.commit_offset for q in info.mq_table.values()) == 4


async def test_consume_message_directly_hands_the_message_to_the_listener(
    cluster: InProcessCluster,
    admin: AdminClient,
    consumer: tuple[PushConsumer, Recorder],
) -> None:
    push, recorder = consumer
    # A topic the consumer does not subscribe to: only the direct request delivers it.
    await admin.create_topic("DirectTopic", queue_nums=1)
    async with Producer("admin_pg", namesrv_addr=cluster.namesrv_addr) as producer:
        fine = await producer.send(tagged("DirectTopic", b"fine", "TagA"))
        boom = await producer.send(tagged("DirectTopic", b"bad", "boom"))
    client_id = push.instance.client_id

    ok = await admin.consume_message_directly("admin_cg", client_id, fine.offset_msg_id)
    failed = await admin.consume_message_directly(
        "admin_cg", client_id, boom.msg_id, topic="DirectTopic"
    )

    assert ok.consume_result is CMResult.CR_SUCCESS
    assert (ok.order, ok.auto_commit) == (False, True)
    assert failed.consume_result is CMResult.CR_THROW_EXCEPTION
    assert failed.remark == "RuntimeError: listener failed on purpose"
    assert [m.body for m in recorder.seen] == [b"fine", b"bad"]
    assert recorder.seen[0].topic == "DirectTopic"


async def test_message_track_detail_tells_consumed_from_not_online(
    cluster: InProcessCluster,
    admin: AdminClient,
    consumer: tuple[PushConsumer, Recorder],
) -> None:
    push, recorder = consumer
    async with Producer("admin_pg", namesrv_addr=cluster.namesrv_addr) as producer:
        sent = await producer.send(tagged("GroupTopic", b"t", "TagA"))
    await eventually_async(lambda: recorder.seen, WAIT_S)
    await push.persist_offsets()
    broker = cluster.brokers[0]
    broker.consumer_offset_manager.commit_offset("127.0.0.1", "offline_cg", "GroupTopic", 0, 0)
    msg = await admin.view_message(sent.offset_msg_id)

    tracks = {t.consumer_group: t.track_type for t in await admin.message_track_detail(msg)}

    assert tracks == {"admin_cg": TrackType.CONSUMED, "offline_cg": TrackType.NOT_ONLINE}


async def test_namesrv_config_is_read_updated_and_saved(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    [(addr, before)] = (await admin.namesrv_config()).items()
    assert addr == cluster.namesrv_addr
    assert before["orderMessageEnable"] == "false"
    assert before["kvConfigPath"] == str(cluster.root / "namesrv" / "kvConfig.json")

    await admin.update_namesrv_config({"orderMessageEnable": "true", "productEnvName": "qa"})

    after = (await admin.namesrv_config())[addr]
    assert (after["orderMessageEnable"], after["productEnvName"]) == ("true", "qa")
    saved = load_namesrv_config(cluster.root / "namesrv" / "namesrv.properties")
    assert (saved.order_message_enable, saved.product_env_name) == (True, "qa")


async def test_namesrv_config_refuses_black_listed_keys_and_bad_values(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    with pytest.raises(MQBrokerError) as black:
        await admin.update_namesrv_config({"kvConfigPath": "/tmp/elsewhere.json"})
    with pytest.raises(MQBrokerError) as bad:
        await admin.update_namesrv_config({"clusterTest": "maybe", "productEnvName": "qa"})

    assert black.value.code == ResponseCode.NO_PERMISSION
    assert black.value.remark == "Can not update config in black list."
    assert bad.value.code == ResponseCode.SYSTEM_ERROR
    assert "clusterTest" in (bad.value.remark or "")
    assert cluster.namesrv.config.product_env_name == "center"  # all or nothing


async def test_wipe_and_add_write_perm_count_the_topics_changed(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    await admin.create_topic("PermTopic", queue_nums=1)
    topics = len(cluster.brokers[0].topic_config_manager.topic_names())

    wiped = await admin.wipe_write_perm("broker-a")
    route = await admin.topic_route("PermTopic")
    added = await admin.add_write_perm("broker-a")

    assert wiped == {cluster.namesrv_addr: topics}
    assert not route.queue_datas[0].perm & PERM_WRITE
    assert added == {cluster.namesrv_addr: topics}
    assert (await admin.topic_route("PermTopic")).queue_datas[0].perm & PERM_WRITE


async def test_kv_config_survives_a_name_server_restart(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    await admin.put_kv_config("ns_admin", "k1", "v1")
    await admin.put_kv_config("ns_admin", "k2", "v2")
    await admin.delete_kv_config("ns_admin", "k2")
    kv_file = Path(cluster.namesrv.config.kv_config_path)

    await cluster.namesrv.stop()
    restarted = type(cluster.namesrv)(cluster.namesrv.config)
    await restarted.start()
    try:
        async with AdminClient(namesrv_addr=restarted.address) as fresh:
            value = await fresh.get_kv_config("ns_admin", "k1")
            gone = await fresh.get_kv_config("ns_admin", "k2")
    finally:
        await restarted.stop()

    assert (value, gone) == ("v1", None)
    assert json.loads(kv_file.read_text())["configTable"]["ns_admin"] == {"k1": "v1"}


def test_the_blocking_admin_client_offers_the_group_operations(tmp_path: Path) -> None:
    with (
        ThreadedCluster(tmp_path / "cluster") as cluster,
        SyncAdminClient(namesrv_addr=cluster.namesrv_addr) as admin,
    ):
        admin.update_subscription_group(SubscriptionGroupConfig(group_name="sync_g"))
        admin.put_kv_config("ns_sync", "k", "v")
        assert admin.get_kv_config("ns_sync", "k") == "v"
        assert admin.namesrv_config()[cluster.namesrv_addr]["productEnvName"] == "center"
        with pytest.raises(ConsumerNotOnlineError):
            admin.consumer_connection("sync_g")
