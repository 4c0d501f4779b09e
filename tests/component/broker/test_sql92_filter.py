"""SQL92 subscriptions against a real BrokerController over sockets: refused as RocketMQ
4.9.8 refuses them without enablePropertyFilter; with it, CHECK_CLIENT_CONFIG compiles the
expression (SUBSCRIPTION_PARSE_FAILED with the parser's message), heartbeats register the
group's filter, and pulls deliver only the messages whose properties match."""

from __future__ import annotations

import asyncio
import json

from orbitmq.broker import BrokerController
from orbitmq.common import decode_messages
from orbitmq.common import message_const as mc
from orbitmq.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SubscriptionData,
)
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import (
    BrokerFactory,
    pull_all,
    send,
    send_header,
    send_request,
    sent_header,
)
from tests.support import COMPAT_DIR

REFUSED = "The broker does not support consumer to filter message by SQL92"
GROUP = "cg-sql"


def check(expression: str, expression_type: str = "SQL92") -> RemotingCommand:
    body = (
        '{"clientId":"c@1","group":"g","subscriptionData":{"topic":"T","subString":'
        f'"{expression}","expressionType":"{expression_type}"}}}}'
    )
    return RemotingCommand.create_request(RequestCode.CHECK_CLIENT_CONFIG, body=body.encode())


def sql_pull(
    topic: str,
    expression: str | None,
    *,
    offset: int = 0,
    sub_version: int = 0,
    suspend_ms: int = 0,
    expression_type: str = "SQL92",
) -> RemotingCommand:
    """A pull carrying its SQL92 subscription, or (``expression`` None) relying on the
    group's heartbeat."""
    sys_flag = 0 if expression is None else FLAG_SUBSCRIPTION
    if suspend_ms:
        sys_flag |= FLAG_SUSPEND
    header = PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=sys_flag,
        commit_offset=0,
        suspend_timeout_millis=suspend_ms,
        subscription=expression,
        sub_version=sub_version,
        expression_type=expression_type,
    )
    return RemotingCommand.create_request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


def sql_heartbeat(topic: str, expression: str, sub_version: int = 100) -> RemotingCommand:
    data = HeartbeatData(
        client_id="c@1",
        consumer_data_set=[
            ConsumerData(
                group_name=GROUP,
                consume_type=ConsumeType.CONSUME_PASSIVELY,
                message_model=MessageModel.CLUSTERING,
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                subscription_data_set=[
                    SubscriptionData(
                        topic=topic,
                        sub_string=expression,
                        sub_version=sub_version,
                        expression_type="SQL92",
                    )
                ],
            )
        ],
    )
    return RemotingCommand.create_request(RequestCode.HEART_BEAT, body=data.to_json())


async def send_numbered(
    client: RemotingClient, broker: BrokerController, topic: str, count: int
) -> None:
    """Messages 0..count-1 with properties a=<i> and TAGS TagA / TagB alternating."""
    for i in range(count):
        properties = {"a": str(i), mc.PROPERTY_TAGS: "TagA" if i % 2 == 0 else "TagB"}
        request = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header(topic, properties), b"%d" % i
        )
        sent_header(await send(client, broker, request))
    await pull_all(client, broker, topic, count)  # all dispatched


async def test_without_enable_property_filter_sql92_is_refused(
    broker: BrokerController, client: RemotingClient
) -> None:
    checked = await send(client, broker, check("a > 1"))
    assert (checked.code, checked.remark) == (ResponseCode.SYSTEM_ERROR, REFUSED)
    await send_numbered(client, broker, "TopicSqlOff", 1)
    pulled = await send(client, broker, sql_pull("TopicSqlOff", "a > 1"))
    assert (pulled.code, pulled.remark) == (ResponseCode.SYSTEM_ERROR, REFUSED)
    # A heartbeat's SQL92 subscription is taken, and its pulls refused the same way.
    await send(client, broker, sql_heartbeat("TopicSqlOff", "a > 1"))
    pulled = await send(client, broker, sql_pull("TopicSqlOff", None, sub_version=100))
    assert (pulled.code, pulled.remark) == (ResponseCode.SYSTEM_ERROR, REFUSED)


async def test_check_client_config_compiles_the_expression(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(enable_property_filter=True)
    assert (await send(client, broker, check("a > 1 AND b = 'x'"))).code == ResponseCode.SUCCESS
    assert (await send(client, broker, check("TagA", "TAG"))).code == ResponseCode.SUCCESS
    bad = await send(client, broker, check("a > 1 AND"))
    assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert bad.remark is not None
    assert bad.remark.startswith("unexpected end of expression")
    assert bad.remark.endswith("at line 1, column 10")
    refused = await send(client, broker, check("a > 'x'"))
    assert refused.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert refused.remark == "Value ''x'' cannot be compared. at line 1, column 5"
    unknown = await send(client, broker, check("a", "CLASS"))
    assert unknown.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED


async def test_a_pull_with_its_subscription_gets_only_matching_messages(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(enable_property_filter=True)
    topic = "TopicSqlPull"
    await send_numbered(client, broker, topic, 40)
    response = await send(client, broker, sql_pull(topic, "a >= 30 AND TAGS = 'TagA'"))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in decode_messages(response.body)] == [
        b"30",
        b"32",
        b"34",
        b"36",
        b"38",
    ]
    assert int(response.ext_fields["nextBeginOffset"]) == 40

    nothing = await send(client, broker, sql_pull(topic, "a > 1000"))
    assert nothing.code == ResponseCode.PULL_RETRY_IMMEDIATELY  # NO_MATCHED_MESSAGE
    assert int(nothing.ext_fields["nextBeginOffset"]) == 40

    bad = await send(client, broker, sql_pull(topic, "a >"))
    assert (bad.code, bad.remark) == (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED,
        "parse the consumer's subscription failed",
    )


async def test_heartbeat_registers_the_filter_that_pulls_without_subscription_use(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(enable_property_filter=True)
    topic = "TopicSqlHeartbeat"
    await send_numbered(client, broker, topic, 10)
    missing = await send(client, broker, sql_pull(topic, None))
    assert missing.code == ResponseCode.SUBSCRIPTION_NOT_EXIST

    await send(client, broker, sql_heartbeat(topic, "a IN ('3', '7')", sub_version=100))
    response = await send(client, broker, sql_pull(topic, None, sub_version=100))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in decode_messages(response.body)] == [b"3", b"7"]

    newer = await send(client, broker, sql_pull(topic, None, sub_version=101))
    assert newer.code == ResponseCode.SUBSCRIPTION_NOT_LATEST

    # A newer heartbeat replaces the filter.
    await send(client, broker, sql_heartbeat(topic, "a = 5", sub_version=101))
    response = await send(client, broker, sql_pull(topic, None, sub_version=101))
    assert [m.body for m in decode_messages(response.body)] == [b"5"]


async def test_a_heartbeat_whose_expression_fails_leaves_no_filter(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(enable_property_filter=True)
    topic = "TopicSqlBadHeartbeat"
    await send_numbered(client, broker, topic, 1)
    await send(client, broker, sql_heartbeat(topic, "a >>> 1"))
    response = await send(client, broker, sql_pull(topic, None, sub_version=100))
    assert response.code == ResponseCode.FILTER_DATA_NOT_EXIST
    assert response.remark == (
        "The broker's consumer filter data is not exist!Your expression may be wrong!"
    )


async def test_a_held_pull_wakes_for_a_matching_message_only(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(enable_property_filter=True)
    topic = "TopicSqlHeld"
    await send_numbered(client, broker, topic, 1)
    held = asyncio.create_task(
        send(client, broker, sql_pull(topic, "a = 'hit'", offset=1, suspend_ms=5000))
    )
    for value in ("miss", "hit"):
        request = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header(topic, {"a": value}), value.encode()
        )
        sent_header(await send(client, broker, request))
    response = await asyncio.wait_for(held, 8)
    if response.code == ResponseCode.PULL_RETRY_IMMEDIATELY:
        # Woken by "miss" alone: the client pulls again from the next offset.
        offset = int(response.ext_fields["nextBeginOffset"])
        response = await send(client, broker, sql_pull(topic, "a = 'hit'", offset=offset))
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in decode_messages(response.body)] == [b"hit"]


async def test_filter_support_retry_filters_the_retry_topic_by_the_original_topics_filter(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(enable_property_filter=True, filter_support_retry=True)
    retry_topic = f"%RETRY%{GROUP}"
    await send(client, broker, sql_heartbeat("Orders", "a = 1"))
    for i, origin in enumerate(["Orders", "Orders", "Other"]):
        properties = {"a": str(i), mc.PROPERTY_RETRY_TOPIC: origin}
        request = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header(retry_topic, properties), b"%d" % i
        )
        sent_header(await send(client, broker, request))
    # "1" matches Orders' filter; "2" is from a topic the group has no filter for.
    delivered = await pull_all(client, broker, retry_topic, 2)
    assert [m.body for m in delivered] == [b"1", b"2"]


def java_frames(code: int) -> dict[str, object]:
    """The first request with ``code`` the Java 4.9.8 push consumer sent to the real broker."""
    path = COMPAT_DIR / "real-broker-4.9.8__java-4.9.8.frames.jsonl"
    for line in path.read_text().splitlines():
        frame = json.loads(line)
        if frame["dir"] == "C->S" and frame["header"]["code"] == code:
            found: dict[str, object] = frame
            return found
    raise AssertionError(f"no request {code} in {path}")


async def test_a_java_push_consumers_sql92_heartbeat_and_pulls(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    """The Java 4.9.8 push consumer's own heartbeat and pull, recorded against a real broker,
    with the subscription turned into SQL92 as ``subscribe(topic, MessageSelector.bySql())``
    sends it: the pull carries no subscription (sysFlag 2), so the broker's registered
    filter decides."""
    broker = await broker_factory(enable_property_filter=True)
    heartbeat_frame = java_frames(RequestCode.HEART_BEAT)
    body = json.loads(str(heartbeat_frame["body"]))
    subscription = body["consumerDataSet"][0]["subscriptionDataSet"][0]
    subscription.update(expressionType="SQL92", subString="a > 1")
    topic, group = subscription["topic"], body["consumerDataSet"][0]["groupName"]
    await send_numbered(client, broker, topic, 4)
    heartbeat = RemotingCommand.create_request(
        RequestCode.HEART_BEAT, body=json.dumps(body).encode()
    )
    assert (await send(client, broker, heartbeat)).code == ResponseCode.SUCCESS

    pull_frame = java_frames(RequestCode.PULL_MESSAGE)
    header = pull_frame["header"]
    assert isinstance(header, dict)
    fields = dict(header["extFields"])
    assert fields["sysFlag"] == "2"  # suspend only: no subscription in the pull
    fields.update(
        queueId="0",
        suspendTimeoutMillis="0",
        expressionType="SQL92",
        subVersion=str(subscription["subVersion"]),
        consumerGroup=group,
    )
    pull = RemotingCommand.create_request(RequestCode.PULL_MESSAGE, fields)
    response = await send(client, broker, pull)
    assert response.code == ResponseCode.SUCCESS, response.remark
    assert [m.body for m in decode_messages(response.body)] == [b"2", b"3"]
