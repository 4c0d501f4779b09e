"""A master and its slave over real sockets (issue 16, metadata and roles): the master answers
the four GET_ALL_* codes with RocketMQ's JSON, the slave learns its master from the name
server and copies the four tables, refuses sends, serves pulls without storing offsets, and
the routes list it (alone once the master's connection closes)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from orbitmq.broker import BrokerController
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import TopicRouteData
from orbitmq.protocol.header import (
    CreateTopicRequestHeader,
    PullMessageResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from orbitmq.protocol.pull_sys_flag import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION
from orbitmq.remoting import RemotingClient
from orbitmq.testing import InProcessCluster
from tests.component.broker.conftest import pull_request, send_header, send_request, sent_header
from tests.eventually import eventually_async

TOPIC = "HaTopic"
GROUP = "cg"


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(tmp_path, slaves=1) as cluster:
        yield cluster


def master_of(cluster: InProcessCluster) -> BrokerController:
    return next(b for b in cluster.brokers if b.broker_config.broker_id == 0)


def slave_of(cluster: InProcessCluster) -> BrokerController:
    (slave,) = cluster.slaves_of("broker-a")
    return slave


async def call(
    client: RemotingClient, broker: BrokerController, code: int, ext: dict[str, str] | None = None
) -> RemotingCommand:
    return await client.invoke(broker.address, RemotingCommand.create_request(code, ext or {}), 5)


async def fill_master(client: RemotingClient, master: BrokerController) -> None:
    """A topic (auto-created by a send), a group (auto-created by a pull), a committed
    offset and a delay level's progress."""
    for _ in range(3):
        sent_header(
            await client.invoke(
                master.address,
                send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), b"body"),
                5,
            )
        )
    pulled = await client.invoke(master.address, pull_request(TOPIC, group=GROUP), 5)
    assert pulled.code == ResponseCode.SUCCESS, pulled.remark
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=0, commit_offset=2
    )
    answer = await call(client, master, RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields())
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert master.schedule_message_service is not None
    # The delivery thread's own table: level 3 has delivered 7 messages.
    master.schedule_message_service.offset_table[3] = 7


def body_json(response: RemotingCommand) -> Any:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return json.loads(response.body)


async def test_the_master_answers_the_four_get_all_codes_with_rocketmq_json(
    pair: InProcessCluster, client: RemotingClient
) -> None:
    master = master_of(pair)
    await fill_master(client, master)

    topics = body_json(await call(client, master, RequestCode.GET_ALL_TOPIC_CONFIG))
    assert set(topics) == {"topicConfigTable", "dataVersion"}
    assert topics["topicConfigTable"][TOPIC]["topicName"] == TOPIC
    assert set(topics["dataVersion"]) >= {"timestamp", "counter"}

    offsets = body_json(await call(client, master, RequestCode.GET_ALL_CONSUMER_OFFSET))
    assert offsets == {"offsetTable": {f"{TOPIC}@{GROUP}": {"0": 2}}}

    delay = body_json(await call(client, master, RequestCode.GET_ALL_DELAY_OFFSET))
    assert delay == {"offsetTable": {"3": 7}}

    groups = body_json(await call(client, master, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG))
    assert set(groups) == {"subscriptionGroupTable", "dataVersion"}
    group = groups["subscriptionGroupTable"][GROUP]
    assert group["groupName"] == GROUP
    assert group["whichBrokerWhenConsumeSlowly"] == 1
    assert group["brokerId"] == 0


async def test_a_slave_learns_its_master_from_the_name_server(pair: InProcessCluster) -> None:
    master, slave = master_of(pair), slave_of(pair)
    assert slave.master_address.master_addr == master.address
    assert slave.master_address.ha_server_addr == master.replication.ha_server_addr
    # A master is told no master.
    assert master.master_address.master_addr is None
    assert master.slave_synchronize is None


async def test_a_slave_copies_and_saves_the_masters_four_tables(
    pair: InProcessCluster, client: RemotingClient
) -> None:
    master, slave = master_of(pair), slave_of(pair)
    await fill_master(client, master)
    assert slave.slave_synchronize is not None
    assert slave.topic_config_manager.select_topic_config(TOPIC) is None

    assert await slave.slave_synchronize.sync_all()

    topic_config = slave.topic_config_manager.select_topic_config(TOPIC)
    assert topic_config is not None and topic_config.write_queue_nums == 4
    assert slave.topic_config_manager.data_version == master.topic_config_manager.data_version
    assert slave.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == 2
    group = slave.subscription_group_manager.get(GROUP)
    assert group is not None
    # Saved as the master's tables are, where a restarted slave reads them.
    store = slave.store_config
    topics_file = json.loads(Path(store.config_file("topics")).read_text())
    assert TOPIC in topics_file["topicConfigTable"]
    offsets_file = json.loads(Path(store.config_file("consumerOffset")).read_text())
    assert offsets_file["offsetTable"][f"{TOPIC}@{GROUP}"] == {"0": 2}
    delay_file = json.loads(Path(store.config_file("delayOffset")).read_text())
    assert delay_file == {"offsetTable": {"3": 7}}
    groups_file = json.loads(Path(store.config_file("subscriptionGroup")).read_text())
    assert GROUP in groups_file["subscriptionGroupTable"]


async def test_the_first_sync_runs_by_itself_3_s_after_start(pair: InProcessCluster) -> None:
    slave = slave_of(pair)
    sync = slave.slave_synchronize
    assert sync is not None and sync.initial_delay_s == 3.0 and sync.period_s == 10.0
    await eventually_async(lambda: sync.rounds >= 1, timeout_s=8, what="the first sync")
    assert (
        slave.topic_config_manager.data_version == master_of(pair).topic_config_manager.data_version
    )


async def test_a_slave_refuses_sends_and_send_backs(
    pair: InProcessCluster, client: RemotingClient
) -> None:
    slave = slave_of(pair)
    request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), b"body")
    response = await client.invoke(slave.address, request, 5)
    assert response.code == ResponseCode.SERVICE_NOT_AVAILABLE
    assert int(response.code) == 14
    assert response.remark is not None
    assert response.remark.startswith(
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full [CL: "
    )
    assert "INDEX: " in response.remark
    assert response.remark.endswith(
        "], messages are put to the slave, message store has been shut down, etc."
    )
    assert slave.message_store.max_phy_offset == 0


async def test_routes_list_the_slave_then_the_slave_alone_when_the_master_goes(
    pair: InProcessCluster, client: RemotingClient
) -> None:
    master, slave = master_of(pair), slave_of(pair)
    sent_header(
        await client.invoke(
            master.address, send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), b"x"), 5
        )
    )

    async def route() -> TopicRouteData:
        request = RemotingCommand.create_request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}
        )
        response = await client.invoke(pair.namesrv_addr, request, 5)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return TopicRouteData.from_json(response.body)

    await master.registration_service.register_now()
    before = await route()
    (broker_data,) = before.broker_datas
    assert broker_data.broker_addrs == {0: master.address, 1: slave.address}
    # The master's connection to the name server closes without an UNREGISTER_BROKER, as
    # when its process dies: the name server drops it at once.
    await master.registration_service.stop(unregister=False)

    async def slave_alone() -> bool:
        brokers = (await route()).broker_datas
        return [b.broker_addrs for b in brokers] == [{1: slave.address}]

    await eventually_async(slave_alone, timeout_s=5, what="the route without the master")
    after = await route()
    assert [(q.broker_name, q.write_queue_nums) for q in after.queue_datas] == [
        (q.broker_name, q.write_queue_nums) for q in before.queue_datas
    ]
    await pair.stop_broker(master)


async def test_a_pull_on_a_slave_waits_for_the_topic_suggests_the_master_and_stores_no_offset(
    pair: InProcessCluster, client: RemotingClient
) -> None:
    master, slave = master_of(pair), slave_of(pair)
    assert not slave.broker_config.slave_read_enable
    await fill_master(client, master)
    request = pull_request(TOPIC, group=GROUP)
    response = await client.invoke(slave.address, request, 5)
    assert response.code == ResponseCode.TOPIC_NOT_EXIST, response.remark

    assert slave.slave_synchronize is not None
    await slave.slave_synchronize.sync_all()
    request = pull_request(
        TOPIC, group=GROUP, sys_flag=FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET, commit_offset=3
    )
    await eventually_async(
        lambda: slave.message_store.max_phy_offset == master.message_store.max_phy_offset,
        what="the slave has copied the master's log",
    )
    response = await client.invoke(slave.address, request, 5)
    assert response.code == ResponseCode.SUCCESS, response.remark  # served, not refused
    answer = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
    assert answer.suggest_which_broker_id == 0
    # The commit offset was not stored: the slave keeps the master's copy.
    assert slave.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == 2


@pytest.mark.parametrize("slave_read_enable", [True, False])
async def test_the_master_suggests_the_slave_for_a_pull_far_behind(
    tmp_path: Path, client: RemotingClient, slave_read_enable: bool
) -> None:
    # accessMessageInMemoryMaxRatio 0: any pull that stops short of the log's end reads
    # "beyond memory", as a backlog bigger than 40 % of RAM would.
    async with InProcessCluster(
        tmp_path,
        broker_settings={"slave_read_enable": slave_read_enable},
        store_settings={"access_message_in_memory_max_ratio": 0},
    ) as cluster:
        master = master_of(cluster)
        for _ in range(3):
            sent_header(
                await client.invoke(
                    master.address,
                    send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), b"b"),
                    5,
                )
            )

        async def suggestion(offset: int) -> int:
            request = pull_request(TOPIC, offset=offset, group=GROUP, max_msg_nums=1)
            response = await client.invoke(master.address, request, 5)
            assert response.code in (ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND)
            header = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
            return header.suggest_which_broker_id

        await eventually_async(lambda: master.message_store.get_max_offset_in_queue(TOPIC, 0) == 3)
        behind = await suggestion(0)
        # At the head: nothing read from disk, back to the master.
        caught_up = await suggestion(3)
    assert (behind, caught_up) == ((1, 0) if slave_read_enable else (0, 0))


async def test_the_cluster_refuses_a_slave_id_of_0(pair: InProcessCluster) -> None:
    with pytest.raises(ValueError, match="broker_id: 0 is not a slave's id"):
        await pair.start_slave("broker-a", 0)


async def test_a_slave_follows_the_masters_changes_and_outlives_a_dead_master(
    pair: InProcessCluster, client: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    master, slave = master_of(pair), slave_of(pair)
    sync = slave.slave_synchronize
    assert sync is not None
    await sync.sync_all()
    version = slave.topic_config_manager.data_version
    header = CreateTopicRequestHeader(
        topic="Added",
        default_topic="TBW102",
        read_queue_nums=2,
        write_queue_nums=2,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        order=False,
    )
    answer = await call(client, master, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields())
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    await sync.sync_all()
    added = slave.topic_config_manager.select_topic_config("Added")
    assert added is not None and added.read_queue_nums == 2
    assert slave.topic_config_manager.data_version != version

    await pair.stop_broker(master)
    assert await sync.sync_all()  # logged, not raised: the next round tries again
    assert "sync topic config from master" in caplog.text
    assert slave.topic_config_manager.select_topic_config("Added") is not None
