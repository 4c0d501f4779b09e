"""Admin requests (offsets, times, topics) and queue locks against a real BrokerController."""

from __future__ import annotations

from pathlib import Path

from orbitmq.broker import BrokerController, RebalanceLockManager
from orbitmq.common import MessageQueue
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import (
    LockBatchRequestBody,
    LockBatchResponseBody,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    UnlockBatchRequestBody,
)
from orbitmq.protocol.header import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
)
from orbitmq.remoting import RemotingClient
from orbitmq.testing import ManualClock
from tests.component.broker.conftest import pull_all, send, send_header, send_request, sent_header


async def send_messages(
    client: RemotingClient, broker: BrokerController, topic: str, count: int, queue_id: int = 0
) -> None:
    for i in range(count):
        request = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header(topic, queue_id=queue_id), f"m{i}".encode()
        )
        sent_header(await send(client, broker, request))
    assert broker.message_store.wait_for_dispatch()


async def max_offset(client: RemotingClient, broker: BrokerController, topic: str) -> int:
    header = GetMaxOffsetRequestHeader(topic=topic, queue_id=0)
    request = RemotingCommand.create_request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())
    response = await send(client, broker, request)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return GetMaxOffsetResponseHeader.from_ext_fields(response.ext_fields).offset


async def all_topics(
    client: RemotingClient, broker: BrokerController
) -> TopicConfigSerializeWrapper:
    request = RemotingCommand.create_request(RequestCode.GET_ALL_TOPIC_CONFIG)
    response = await send(client, broker, request)
    assert response.code == ResponseCode.SUCCESS, response.remark
    return TopicConfigSerializeWrapper.from_json(response.body)


def create_topic_request(topic: str, queue_nums: int = 4, perm: int = 6) -> RemotingCommand:
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=queue_nums,
        write_queue_nums=queue_nums,
        perm=perm,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    return RemotingCommand.create_request(
        RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields()
    )


def delete_topic_request(topic: str) -> RemotingCommand:
    header = DeleteTopicRequestHeader(topic=topic)
    return RemotingCommand.create_request(
        RequestCode.DELETE_TOPIC_IN_BROKER, header.to_ext_fields()
    )


async def test_offsets_and_times_after_sends(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicAdminOffsets"
    assert await max_offset(client, broker, topic) == 0
    await send_messages(client, broker, topic, 3)
    assert await max_offset(client, broker, topic) == 3

    min_header = GetMinOffsetRequestHeader(topic=topic, queue_id=0)
    response = await send(
        client,
        broker,
        RemotingCommand.create_request(RequestCode.GET_MIN_OFFSET, min_header.to_ext_fields()),
    )
    assert response.code == ResponseCode.SUCCESS
    assert GetMinOffsetResponseHeader.from_ext_fields(response.ext_fields).offset == 0

    messages = await pull_all(client, broker, topic, 3)
    earliest_header = GetEarliestMsgStoretimeRequestHeader(topic=topic, queue_id=0)
    response = await send(
        client,
        broker,
        RemotingCommand.create_request(
            RequestCode.GET_EARLIEST_MSG_STORETIME, earliest_header.to_ext_fields()
        ),
    )
    assert response.code == ResponseCode.SUCCESS
    earliest = GetEarliestMsgStoretimeResponseHeader.from_ext_fields(response.ext_fields)
    assert earliest.timestamp == messages[0].store_timestamp


async def test_search_offset_by_timestamp(broker: BrokerController, client: RemotingClient) -> None:
    topic = "TopicAdminSearch"
    await send_messages(client, broker, topic, 3)
    messages = await pull_all(client, broker, topic, 3)

    async def search(timestamp: int) -> int:
        header = SearchOffsetRequestHeader(topic=topic, queue_id=0, timestamp=timestamp)
        request = RemotingCommand.create_request(
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.to_ext_fields()
        )
        response = await send(client, broker, request)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return SearchOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    assert await search(0) == 0
    for message in messages:
        found = await search(message.store_timestamp)
        # The first message stored at or after that time.
        assert messages[found].store_timestamp >= message.store_timestamp
        assert found == 0 or messages[found - 1].store_timestamp < message.store_timestamp
    assert await search(messages[-1].store_timestamp + 60_000) == 3


async def test_create_topic_then_list_it_and_send_to_it(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicAdminCreated"
    response = await send(client, broker, create_topic_request(topic, queue_nums=2))
    assert response.code == ResponseCode.SUCCESS, response.remark

    wrapper = await all_topics(client, broker)
    created = wrapper.topic_config_table[topic]
    assert (created.read_queue_nums, created.write_queue_nums, created.perm) == (2, 2, 6)
    assert created.topic_filter_type is TopicFilterType.SINGLE_TAG
    assert "TBW102" in wrapper.topic_config_table
    assert wrapper.data_version.counter >= 1

    # Sending to the created topic uses its configuration, not TBW102's.
    request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic, queue_id=1), b"x")
    assert sent_header(await send(client, broker, request)).queue_id == 1
    # And topics.json holds it.
    assert topic in broker.topic_config_manager.topic_names()
    assert topic in Path(broker.topic_config_manager.config_path).read_text()


async def test_create_topic_refuses_system_and_illegal_names(
    broker: BrokerController, client: RemotingClient
) -> None:
    for topic, remark in [
        ("TBW102", "The topic[TBW102] is conflict with system topic."),
        ("rmq_sys_x", "The topic[rmq_sys_x] is conflict with system topic."),
        ("broker-a", "The topic[broker-a] is conflict with system topic."),
        ("bad topic", "The specified topic contains illegal characters"),
        ("t" * 128, "The specified topic is longer than topic max length."),
    ]:
        response = await send(client, broker, create_topic_request(topic))
        assert response.code == ResponseCode.SYSTEM_ERROR, topic
        assert response.remark is not None
        assert response.remark.startswith(remark), response.remark
    delete = await send(client, broker, delete_topic_request("SCHEDULE_TOPIC_XXXX"))
    assert delete.code == ResponseCode.SYSTEM_ERROR
    assert "SCHEDULE_TOPIC_XXXX" in broker.topic_config_manager.topic_names()


async def test_delete_topic_drops_config_queues_and_offsets(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic, other = "TopicAdminDoomed", "TopicAdminKept"
    await send_messages(client, broker, topic, 2)
    await send_messages(client, broker, other, 1)
    broker.consumer_offset_manager.commit_offset("127.0.0.1", "cg", topic, 0, 2)
    broker.consumer_offset_manager.commit_offset("127.0.0.1", "cg", other, 0, 1)

    response = await send(client, broker, delete_topic_request(topic))
    assert response.code == ResponseCode.SUCCESS, response.remark

    assert topic not in (await all_topics(client, broker)).topic_config_table
    assert broker.message_store.find_consume_queue(topic, 0) is None
    assert await max_offset(client, broker, topic) == 0
    assert broker.consumer_offset_manager.query_offset("cg", topic, 0) == -1
    # The other topic is untouched.
    assert await max_offset(client, broker, other) == 1
    assert broker.consumer_offset_manager.query_offset("cg", other, 0) == 1
    # Deleting again is still a success, as in RocketMQ.
    again = await send(client, broker, delete_topic_request(topic))
    assert again.code == ResponseCode.SUCCESS


async def test_lock_blocks_other_clients_until_expiry_and_unlock(
    broker: BrokerController, client: RemotingClient
) -> None:
    clock = ManualClock(1_000_000)
    broker.admin_broker_processor.rebalance_lock_manager = RebalanceLockManager(clock=clock)
    mqs = {MessageQueue("TopicOrderly", "broker-a", i) for i in range(2)}

    async def lock(client_id: str, queues: set[MessageQueue]) -> set[MessageQueue]:
        body = LockBatchRequestBody(consumer_group="cg", client_id=client_id, mq_set=queues)
        request = RemotingCommand.create_request(RequestCode.LOCK_BATCH_MQ, body=body.to_json())
        response = await send(client, broker, request)
        assert response.code == ResponseCode.SUCCESS, response.remark
        return LockBatchResponseBody.from_json(response.body).lock_ok_mq_set

    async def unlock(client_id: str, queues: set[MessageQueue]) -> None:
        body = UnlockBatchRequestBody(consumer_group="cg", client_id=client_id, mq_set=queues)
        request = RemotingCommand.create_request(RequestCode.UNLOCK_BATCH_MQ, body=body.to_json())
        response = await send(client, broker, request)
        assert response.code == ResponseCode.SUCCESS, response.remark

    assert await lock("client-a", mqs) == mqs
    assert await lock("client-b", mqs) == set()
    clock.advance(30_000)
    assert await lock("client-a", mqs) == mqs  # renewed
    clock.advance(59_000)
    assert await lock("client-b", mqs) == set()
    clock.advance(2_000)
    assert await lock("client-b", mqs) == mqs  # client-a's lock expired
    assert await lock("client-a", mqs) == set()

    queue0 = {MessageQueue("TopicOrderly", "broker-a", 0)}
    await unlock("client-a", queue0)  # not the holder: nothing changes
    assert await lock("client-a", queue0) == set()
    await unlock("client-b", queue0)
    assert await lock("client-a", mqs) == queue0
