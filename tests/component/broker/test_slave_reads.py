"""Reading from a slave (issue 16 §4): the slave copies the master's messages over the HA
connection, and pulls on it find them. A send-back to it is refused; our client's
PullAPIWrapper follows the master's suggestion to the slave and the slave's back to the
master (``find_broker`` says which broker each pull goes to)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest

from orbitmq.broker import BrokerController
from orbitmq.client import (
    ClientConfig,
    ConsumeContext,
    MQClientInstance,
    PushConsumer,
    PushConsumerConfig,
)
from orbitmq.client.find_broker import (
    FindBrokerResult,
    find_broker_address_in_admin,
    find_broker_address_in_subscribe,
)
from orbitmq.client.pull_api_wrapper import PullAPIWrapper
from orbitmq.client.pull_result import PullStatus
from orbitmq.common import MessageExt, MessageQueue, decode_messages
from orbitmq.filter import SubscriptionData
from orbitmq.protocol import ConsumeFromWhere, RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import (
    ConsumerSendMsgBackRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)
from orbitmq.protocol.pull_sys_flag import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION
from orbitmq.remoting import RemotingClient
from orbitmq.testing import InProcessCluster
from tests.component.broker.conftest import pull_request, send_header, send_request, sent_header
from tests.eventually import eventually_async

TOPIC = "SlaveReadTopic"
GROUP = "cg"


@pytest.fixture
async def pair(tmp_path: Path, client: RemotingClient) -> AsyncIterator[InProcessCluster]:
    """A master with slaveReadEnable and accessMessageInMemoryMaxRatio 0 (every pull short of
    the head counts as beyond memory) and 3 messages in queue 0, and its slave once it has
    copied them (HA log shipping) and the master's metadata."""
    async with InProcessCluster(
        tmp_path,
        broker_settings={"slave_read_enable": True},
        store_settings={"access_message_in_memory_max_ratio": 0},
    ) as cluster:
        (master,) = cluster.brokers
        for i in range(3):
            header = send_header(TOPIC)
            request = send_request(RequestCode.SEND_MESSAGE_V2, header, f"m{i}".encode())
            sent_header(await client.invoke(master.address, request, 5))
        # The slave reads its own settings: slaveReadEnable off, as RocketMQ's default.
        cluster.broker_settings = {}
        slave = await cluster.start_slave("broker-a")
        assert slave.slave_synchronize is not None
        assert await slave.slave_synchronize.sync_all()
        await eventually_async(
            lambda: slave.message_store.get_max_offset_in_queue(TOPIC, 0) == 3,
            what="the slave has copied the master's messages",
        )
        yield cluster


def slave_of(cluster: InProcessCluster) -> BrokerController:
    (slave,) = cluster.slaves_of("broker-a")
    return slave


async def test_a_slave_serves_pulls_suggests_the_master_and_stores_no_offset(
    pair: InProcessCluster, client: RemotingClient
) -> None:
    slave = slave_of(pair)
    request = pull_request(
        TOPIC, group=GROUP, sys_flag=FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET, commit_offset=2
    )
    response = await client.invoke(slave.address, request, 5)
    assert response.code == ResponseCode.SUCCESS, response.remark
    messages = decode_messages(response.body)
    assert [m.body for m in messages] == [b"m0", b"m1", b"m2"]
    answer = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
    assert answer.suggest_which_broker_id == 0
    assert slave.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == -1


async def test_a_slave_refuses_a_send_back(pair: InProcessCluster, client: RemotingClient) -> None:
    slave = slave_of(pair)
    header = ConsumerSendMsgBackRequestHeader(
        offset=0, group=GROUP, delay_level=0, origin_topic=TOPIC
    )
    request = RemotingCommand.create_request(
        RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields()
    )
    response = await client.invoke(slave.address, request, 5)
    # RocketMQ 4.9.8's asyncConsumerSendMsgBack: SYSTEM_ERROR with the put status's name.
    assert (response.code, response.remark) == (ResponseCode.SYSTEM_ERROR, "SERVICE_NOT_AVAILABLE")


async def test_our_client_follows_the_suggestion_to_the_slave_and_back(
    pair: InProcessCluster,
) -> None:
    master, slave = pair.brokers[0], slave_of(pair)
    instance = MQClientInstance(ClientConfig(namesrv_addr=pair.namesrv_addr))
    try:
        wrapper = PullAPIWrapper(instance)
        mq = MessageQueue(TOPIC, "broker-a", 0)
        subscription = SubscriptionData(TOPIC, "*")

        async def pull(offset: int) -> tuple[list[bytes], tuple[int | None, str]]:
            """The bodies pulled at ``offset``, and the id and address that served them."""
            header = PullMessageRequestHeader(
                consumer_group=GROUP,
                topic=TOPIC,
                queue_id=0,
                queue_offset=offset,
                max_msg_nums=1,
                sys_flag=FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET,
                commit_offset=offset,
                suspend_timeout_millis=0,
                subscription="*",
                sub_version=0,
            )
            result = await wrapper.pull_kernel(mq, header, subscription, 5)
            assert result.pull_status is PullStatus.FOUND
            return [m.body for m in result.messages], (result.broker_id, result.broker_addr)

        assert await wrapper.find_broker(mq) == FindBrokerResult(master.address, False, 0)
        # The master: 2 more messages lie behind -> "go to 1".
        assert await pull(0) == ([b"m0"], (0, master.address))
        assert await wrapper.find_broker(mq) == FindBrokerResult(slave.address, True, 1)
        # The slave (slaveReadEnable off): "go to 0".
        assert await pull(1) == ([b"m1"], (1, slave.address))
        assert await wrapper.find_broker(mq) == FindBrokerResult(master.address, False, 0)
        # The pull to the slave carried no commit offset; the master's did.
        assert slave.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == -1
        assert master.consumer_offset_manager.query_offset(GROUP, TOPIC, 0) == 0
    finally:
        await instance.shutdown()


def test_find_broker_address_in_subscribe_falls_back_as_rocketmq() -> None:
    both = {0: "m:1", 1: "s:1"}
    assert find_broker_address_in_subscribe(both, 1, False) == FindBrokerResult("s:1", True, 1)
    assert find_broker_address_in_subscribe(both, 0, False) == FindBrokerResult("m:1", False, 0)
    # A slave id that is gone: the next id, else any broker of the group.
    assert find_broker_address_in_subscribe({0: "m:1", 2: "s:2"}, 1, False) == (
        FindBrokerResult("s:2", True, 2)
    )
    assert find_broker_address_in_subscribe({0: "m:1"}, 1, False) == (
        FindBrokerResult("m:1", False, 0)
    )
    assert find_broker_address_in_subscribe({0: "m:1"}, 1, True) is None
    # The master gone: its queues are read from the slave.
    assert find_broker_address_in_subscribe({1: "s:1"}, 0, False) == (
        FindBrokerResult("s:1", True, 1)
    )
    assert find_broker_address_in_subscribe({}, 0, False) is None


def test_find_broker_address_in_admin_takes_the_master_else_a_slave() -> None:
    """Where offsets are committed and queried: the master while listed, else a slave."""
    assert find_broker_address_in_admin({0: "m:1", 1: "s:1"}) == FindBrokerResult("m:1", False, 0)
    assert find_broker_address_in_admin({2: "s:2", 1: "s:1"}) == FindBrokerResult("s:1", True, 1)
    assert find_broker_address_in_admin({}) is None
    assert find_broker_address_in_admin(None) is None


async def test_a_group_started_with_the_master_gone_reads_from_the_slave(
    pair: InProcessCluster,
) -> None:
    """Its consumer list and offsets are asked of the slave (findBrokerAddrByTopic and
    findBrokerAddressInAdmin fall back to a slave); without that its rebalance assigned it
    nothing and it read nothing."""
    await pair.stop_broker(pair.brokers[0])
    received: list[bytes] = []

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        received.extend(m.body for m in messages)

    consumer = PushConsumer(
        "late-cg",
        namesrv_addr=pair.namesrv_addr,
        config=PushConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET),
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(on_messages)
    await consumer.start()
    try:
        await eventually_async(lambda: len(received) >= 3, what="the slave's 3 messages")
    finally:
        await consumer.shutdown()
    assert sorted(received) == [b"m0", b"m1", b"m2"]
