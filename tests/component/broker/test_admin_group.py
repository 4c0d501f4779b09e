"""The group admin requests against a real broker over TCP, with frames as RocketMQ 4.9.8's
mqadmin sends them: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200, the group's settings persisted
and enforced), GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204),
QUERY_TOPIC_CONSUME_BY_WHO (300) and the relayed GET_CONSUMER_RUNNING_INFO (307)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import orjson

from orbitmq.broker import BrokerController
from orbitmq.common import decode_message, decode_message_id
from orbitmq.common.topic import dlq_topic
from orbitmq.protocol import (
    ConsumerConnection,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SubscriptionData,
    SubscriptionGroupConfig,
)
from orbitmq.protocol.header import ConsumerSendMsgBackRequestHeader
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor, RemotingClient
from tests.component.broker.conftest import pull_request, send, send_header, send_request

#: The body mqadmin updateSubGroup sends (fastjson, every member of SubscriptionGroupConfig).
MQADMIN_GROUP_BODY = (
    b'{"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":false,'
    b'"consumeFromMinEnable":false,"groupName":"cg_admin","notifyConsumerIdsChangedEnable":true,'
    b'"retryMaxTimes":1,"retryQueueNums":2,"whichBrokerWhenConsumeSlowly":1}'
)
#: extFields mqadmin adds to every request even with ACL off: ignored.
SIGNED = {"AccessKey": "rocketmq2", "Signature": "c2lnbmF0dXJl"}


def update_group_request(body: bytes) -> RemotingCommand:
    return RemotingCommand.create_request(
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, dict(SIGNED), body
    )


async def test_update_subscription_group_takes_every_setting_and_persists_it(
    broker: BrokerController, client: RemotingClient
) -> None:
    response = await send(client, broker, update_group_request(MQADMIN_GROUP_BODY))

    assert response.code == ResponseCode.SUCCESS, response.remark
    expected = SubscriptionGroupConfig(
        group_name="cg_admin",
        consume_enable=False,
        consume_from_min_enable=False,
        retry_queue_nums=2,
        retry_max_times=1,
    )
    assert broker.subscription_group_manager.get("cg_admin") == expected
    saved = json.loads(Path(broker.store_config.config_file("subscriptionGroup")).read_text())
    # As 4.9.8's mqadmin sent it, plus RocketMQ 5's consumeMessageOrderly at its default.
    assert saved["subscriptionGroupTable"]["cg_admin"] == {
        **json.loads(MQADMIN_GROUP_BODY),
        "consumeMessageOrderly": False,
    }


async def test_a_group_with_consume_disabled_is_refused_pulls(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send(client, broker, update_group_request(MQADMIN_GROUP_BODY))

    response = await send(client, broker, pull_request("TopicTest", group="cg_admin"))

    assert response.code == ResponseCode.NO_PERMISSION
    assert response.remark == "subscription group no permission, cg_admin"


async def test_send_back_uses_the_groups_retry_max_times(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send(client, broker, update_group_request(MQADMIN_GROUP_BODY))
    header = send_header("TopicTest", reconsume_times=1)
    sent = await send(client, broker, send_request(RequestCode.SEND_MESSAGE, header, b"x"))
    msg_id = sent.ext_fields["msgId"]
    back = ConsumerSendMsgBackRequestHeader(
        offset=decode_message_id(msg_id)[1],
        group="cg_admin",
        delay_level=0,
        origin_msg_id=msg_id,
        origin_topic="TopicTest",
    )

    response = await send(
        client,
        broker,
        RemotingCommand.create_request(RequestCode.CONSUMER_SEND_MSG_BACK, back.to_ext_fields()),
    )

    # retryMaxTimes 1 and one reconsume already: a dead letter, not a retry.
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert broker.topic_config_manager.select_topic_config(dlq_topic("cg_admin")) is not None


async def test_a_body_without_a_group_name_is_refused(
    broker: BrokerController, client: RemotingClient
) -> None:
    response = await send(client, broker, update_group_request(b'{"consumeEnable":false}'))

    assert response.code == ResponseCode.SYSTEM_ERROR
    assert "groupName" in (response.remark or "")


def heartbeat(client_id: str) -> RemotingCommand:
    data = HeartbeatData(
        client_id=client_id,
        producer_data_set=[ProducerData(group_name="pg_admin")],
        consumer_data_set=[
            ConsumerData(
                group_name="cg_admin",
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                subscription_data_set=[SubscriptionData(topic="TopicTest", sub_string="*")],
            )
        ],
    )
    return RemotingCommand.create_request(RequestCode.HEART_BEAT, body=data.to_json())


async def test_connections_of_a_consumer_and_a_producer_group(
    broker: BrokerController, client: RemotingClient
) -> None:
    beat = await send(client, broker, heartbeat("127.0.0.1@admin"))
    assert beat.code == ResponseCode.SUCCESS, beat.remark

    consumers = await send(
        client,
        broker,
        RemotingCommand.create_request(
            RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "cg_admin", **SIGNED}
        ),
    )
    producers = await send(
        client,
        broker,
        RemotingCommand.create_request(
            RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "pg_admin", **SIGNED}
        ),
    )

    assert consumers.code == producers.code == ResponseCode.SUCCESS
    raw = orjson.loads(consumers.body)
    # RocketMQ's ConsumerConnection members, as mqadmin's fastjson reads them.
    assert set(raw) == {
        "connectionSet",
        "subscriptionTable",
        "consumeType",
        "messageModel",
    }  # consumeFromWhere: none was sent, so none is written (fastjson drops nulls)
    [connection] = raw["connectionSet"]
    assert set(connection) == {"clientId", "clientAddr", "language", "version"}
    assert connection["clientId"] == "127.0.0.1@admin"
    assert connection["language"] == "PYTHON"
    assert raw["consumeType"] == "CONSUME_PASSIVELY"
    assert raw["subscriptionTable"]["TopicTest"]["subString"] == "*"
    body = ConsumerConnection.from_json(consumers.body)
    assert body.connection_set[0].client_addr.startswith("127.0.0.1:")
    assert orjson.loads(producers.body)["connectionSet"][0]["clientId"] == "127.0.0.1@admin"


async def test_groups_not_online_are_answered_as_rocketmq_does(
    broker: BrokerController, client: RemotingClient
) -> None:
    consumers = await send(
        client,
        broker,
        RemotingCommand.create_request(
            RequestCode.GET_CONSUMER_CONNECTION_LIST, {"consumerGroup": "nobody"}
        ),
    )
    producers = await send(
        client,
        broker,
        RemotingCommand.create_request(
            RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": "nobody"}
        ),
    )
    running = await send(
        client,
        broker,
        RemotingCommand.create_request(
            RequestCode.GET_CONSUMER_RUNNING_INFO,
            {"consumerGroup": "nobody", "clientId": "x@y", "jstackEnable": "false"},
        ),
    )

    assert consumers.code == ResponseCode.CONSUMER_NOT_ONLINE
    assert consumers.remark == "the consumer group[nobody] not online"
    assert producers.code == ResponseCode.SYSTEM_ERROR
    assert producers.remark == "the producer group[nobody] not exist"
    assert running.code == ResponseCode.SYSTEM_ERROR
    assert running.remark == "The Consumer <nobody> <x@y> not online"


async def test_query_topic_consume_by_who_names_online_groups_and_groups_with_offsets(
    broker: BrokerController, client: RemotingClient
) -> None:
    await send(client, broker, heartbeat("127.0.0.1@admin"))
    broker.consumer_offset_manager.commit_offset("127.0.0.1", "offline_group", "TopicTest", 0, 3)

    response = await send(
        client,
        broker,
        RemotingCommand.create_request(
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, {"topic": "TopicTest"}
        ),
    )

    assert response.code == ResponseCode.SUCCESS
    assert sorted(orjson.loads(response.body)["groupList"]) == ["cg_admin", "offline_group"]


class RecordingClientProcessor(CodeDispatchingProcessor):
    """Stands for a consumer client: answers 307 and 309 with a fixed body, keeping what the
    broker relayed."""

    def __init__(self) -> None:
        self.relayed: list[RemotingCommand] = []
        super().__init__(
            {
                RequestCode.GET_CONSUMER_RUNNING_INFO: self._answer,
                RequestCode.CONSUME_MESSAGE_DIRECTLY: self._answer,
            }
        )

    async def _answer(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        self.relayed.append(request)
        return RemotingCommand.create_success(request, body=b'{"answer":%d}' % request.code)


async def test_running_info_and_consume_directly_are_relayed_to_the_client_and_back(
    broker: BrokerController, client: RemotingClient
) -> None:
    consumer_side = RecordingClientProcessor()
    for code in consumer_side.codes:
        client.table.register_processor(code, consumer_side)
    await send(client, broker, heartbeat("127.0.0.1@admin"))
    header = send_header("TopicTest")
    sent = await send(client, broker, send_request(RequestCode.SEND_MESSAGE, header, b"direct"))
    msg_id = sent.ext_fields["msgId"]
    admin = RemotingClient(connect_timeout_s=2.0)
    try:
        running = await send(
            admin,
            broker,
            RemotingCommand.create_request(
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                {
                    "consumerGroup": "cg_admin",
                    "clientId": "127.0.0.1@admin",
                    "jstackEnable": "true",
                },
            ),
        )
        direct = await send(
            admin,
            broker,
            RemotingCommand.create_request(
                RequestCode.CONSUME_MESSAGE_DIRECTLY,
                {"consumerGroup": "cg_admin", "clientId": "127.0.0.1@admin", "msgId": msg_id},
            ),
        )
    finally:
        await admin.close()

    assert (running.code, running.body) == (ResponseCode.SUCCESS, b'{"answer":307}')
    assert (direct.code, direct.body) == (ResponseCode.SUCCESS, b'{"answer":309}')
    asked_info, asked_direct = consumer_side.relayed
    assert asked_info.ext_fields["jstackEnable"] == "true"
    # The broker adds its name and the stored message itself.
    assert asked_direct.ext_fields["brokerName"] == "broker-a"
    assert decode_message(asked_direct.body).body == b"direct"


async def test_a_group_without_broadcast_permission_is_refused_broadcast_pulls(
    broker: BrokerController, client: RemotingClient
) -> None:
    closed = SubscriptionGroupConfig(group_name="cg_admin", consume_broadcast_enable=False)
    await send(client, broker, update_group_request(closed.to_json()))
    data = HeartbeatData(
        client_id="127.0.0.1@b",
        consumer_data_set=[
            ConsumerData(
                group_name="cg_admin",
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.BROADCASTING,
                subscription_data_set=[SubscriptionData(topic="TopicTest", sub_string="*")],
            )
        ],
    )
    await send(
        client, broker, RemotingCommand.create_request(RequestCode.HEART_BEAT, body=data.to_json())
    )

    header = send_header("TopicTest")  # the topic exists: its checks come first
    await send(client, broker, send_request(RequestCode.SEND_MESSAGE, header, b"x"))

    # No subscription flag: the pull relies on the heartbeat, as a Java push consumer's does.
    response = await send(client, broker, pull_request("TopicTest", group="cg_admin", sys_flag=0))

    assert response.code == ResponseCode.NO_PERMISSION
    assert response.remark == "the consumer group[cg_admin] can not consume by broadcast way"


class SilentClientProcessor(CodeDispatchingProcessor):
    """A client that never answers in time."""

    def __init__(self) -> None:
        super().__init__({RequestCode.GET_CONSUMER_RUNNING_INFO: self._stall})

    async def _stall(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        await asyncio.sleep(2.0)
        return RemotingCommand.create_success(request)


async def test_a_client_that_does_not_answer_is_a_consume_msg_timeout(
    broker: BrokerController, client: RemotingClient
) -> None:
    silent = SilentClientProcessor()
    client.table.register_processor(RequestCode.GET_CONSUMER_RUNNING_INFO, silent)
    await send(client, broker, heartbeat("127.0.0.1@admin"))
    broker.admin_group_processor.call_client_timeout_s = 0.1
    admin = RemotingClient(connect_timeout_s=2.0)
    try:
        response = await send(
            admin,
            broker,
            RemotingCommand.create_request(
                RequestCode.GET_CONSUMER_RUNNING_INFO,
                {"consumerGroup": "cg_admin", "clientId": "127.0.0.1@admin"},
            ),
        )
    finally:
        await admin.close()

    assert response.code == ResponseCode.CONSUME_MSG_TIMEOUT
    assert (response.remark or "").startswith("consumer <cg_admin> <127.0.0.1@admin> Timeout")
