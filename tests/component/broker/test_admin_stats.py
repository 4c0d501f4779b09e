"""GET_TOPIC_STATS_INFO (202), GET_CONSUME_STATS (208), INVOKE_BROKER_TO_RESET_OFFSET (222)
and DELETE_SUBSCRIPTIONGROUP (207) against a real BrokerController: RocketMQ's answers,
including its error remarks."""

from __future__ import annotations

from orbitmq.broker import BrokerController
from orbitmq.common import MessageQueue
from orbitmq.protocol import (
    ConsumeStats,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicStatsTable,
)
from orbitmq.protocol.header import (
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    ResetOffsetRequestHeader,
)
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import send, send_header, send_request, sent_header


async def call(
    client: RemotingClient, broker: BrokerController, code: int, fields: dict[str, str]
) -> RemotingCommand:
    return await send(client, broker, RemotingCommand.create_request(code, fields))


async def test_topic_stats_and_consume_stats(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "StatsTopic"
    for _ in range(3):
        request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic, queue_id=1), b"x")
        sent_header(await send(client, broker, request))
    assert broker.message_store.wait_for_dispatch(5)
    missing = await call(
        client,
        broker,
        RequestCode.GET_TOPIC_STATS_INFO,
        GetTopicStatsInfoRequestHeader(topic="Nope").to_ext_fields(),
    )
    assert (missing.code, missing.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist")

    stats = await call(
        client,
        broker,
        RequestCode.GET_TOPIC_STATS_INFO,
        GetTopicStatsInfoRequestHeader(topic=topic).to_ext_fields(),
    )
    table = TopicStatsTable.from_json(stats.body).offset_table
    q1 = table[MessageQueue(topic, "broker-a", 1)]
    assert (q1.min_offset, q1.max_offset) == (0, 3)
    assert q1.last_update_timestamp == broker.message_store.get_message_store_timestamp(topic, 1, 2)
    assert table[MessageQueue(topic, "broker-a", 0)].max_offset == 0

    broker.consumer_offset_manager.commit_offset("test", "stats_cg", topic, 1, 2)
    consume = await call(
        client,
        broker,
        RequestCode.GET_CONSUME_STATS,
        GetConsumeStatsRequestHeader(consumer_group="stats_cg").to_ext_fields(),
    )
    offsets = ConsumeStats.from_json(consume.body)
    wrapper = offsets.offset_table[MessageQueue(topic, "broker-a", 1)]
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (3, 2)
    assert wrapper.last_timestamp == broker.message_store.get_message_store_timestamp(topic, 1, 1)
    assert offsets.total_diff() == 1


async def test_reset_offset_answers_as_rocketmq(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "ResetStatsTopic"
    request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic), b"x")
    sent_header(await send(client, broker, request))

    def reset(group: str, target: str = topic) -> dict[str, str]:
        return ResetOffsetRequestHeader(
            topic=target, group=group, timestamp=0, is_force=True
        ).to_ext_fields()

    no_topic = await call(
        client, broker, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset("g", "Nope")
    )
    assert no_topic.code == ResponseCode.SYSTEM_ERROR
    assert "no topic in this broker. topic=Nope" in (no_topic.remark or "")
    # queryOffset answers -1 for a queue the group never committed: "not exist".
    no_group = await call(
        client, broker, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset("ghost_cg")
    )
    assert (no_group.code, no_group.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "THe consumer group <ghost_cg> not exist",
    )
    for queue_id in range(4):
        broker.consumer_offset_manager.commit_offset("test", "offline_cg", topic, queue_id, 1)
    offline = await call(
        client, broker, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, reset("offline_cg")
    )
    assert offline.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert broker.consumer_offset_manager.query_offset("offline_cg", topic, 0) == 1  # unchanged


async def test_delete_subscription_group_with_its_offsets(
    broker: BrokerController, client: RemotingClient
) -> None:
    broker.subscription_group_manager.find_subscription_group_config("doomed_cg")
    broker.consumer_offset_manager.commit_offset("test", "doomed_cg", "T", 0, 5)
    header = DeleteSubscriptionGroupRequestHeader(group_name="doomed_cg", remove_offset=True)
    answer = await call(
        client, broker, RequestCode.DELETE_SUBSCRIPTIONGROUP, header.to_ext_fields()
    )
    assert answer.code == ResponseCode.SUCCESS
    assert "doomed_cg" not in broker.subscription_group_manager.group_names()
    assert broker.consumer_offset_manager.query_offset("doomed_cg", "T", 0) == -1
