"""Typed bodies: RocketMQ's member names and defaults, fastjson's input, round trips."""

from __future__ import annotations

import struct
import zlib

import orjson
import pytest

from orbitmq.common import MessageQueue
from orbitmq.protocol.body import (
    BodyError,
    BrokerData,
    BrokerStatsData,
    BrokerStatsItem,
    ClusterInfo,
    ConsumeFromWhere,
    ConsumerData,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeType,
    DataVersion,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    KVTable,
    LockBatchRequestBody,
    LockBatchResponseBody,
    MessageModel,
    OffsetWrapper,
    ProducerData,
    QueueData,
    RegisterBrokerBody,
    ResetOffsetBody,
    SubscriptionData,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicList,
    TopicOffset,
    TopicRouteData,
    TopicStatsTable,
    UnlockBatchRequestBody,
    stats_key,
)

MQ0 = MessageQueue("TopicTest", "broker-a", 0)
MQ1 = MessageQueue("TopicTest", "broker-a", 1)


def test_cluster_info_as_the_name_server_writes_it() -> None:
    text = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}},'
        b'"clusterAddrTable":{"DefaultCluster":["broker-a","broker-b"]}}'
    )
    info = ClusterInfo.from_json(text)
    broker = info.broker_addr_table["broker-a"]
    assert broker.broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert info.cluster_addr_table == {"DefaultCluster": {"broker-a", "broker-b"}}
    written = orjson.loads(info.to_json())
    assert written["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {
        "0": "10.0.0.1:10911",
        "1": "10.0.0.2:10911",
    }
    assert written["clusterAddrTable"] == {"DefaultCluster": ["broker-a", "broker-b"]}
    assert ClusterInfo.from_json(info.to_json()) == info


def test_consumer_offset_json_as_rocketmq_persists_it() -> None:
    # consumerOffset.json: fastjson's pretty form with bare queue ids.
    text = (
        '{\n\t"offsetTable":{\n\t\t"TopicTest@please_rename_unique_group_name_4":{0:250,1:249,'
        '\n\t\t\t2:250,3:251\n\t\t},\n\t\t"%RETRY%g@g":{0:0}\n\t}\n}'
    )
    wrapper = ConsumerOffsetSerializeWrapper.from_json(text)
    assert wrapper.offset_table == {
        "TopicTest@please_rename_unique_group_name_4": {0: 250, 1: 249, 2: 250, 3: 251},
        "%RETRY%g@g": {0: 0},
    }
    assert wrapper.to_json() == (
        b'{"offsetTable":{"TopicTest@please_rename_unique_group_name_4":'
        b'{"0":250,"1":249,"2":250,"3":251},"%RETRY%g@g":{"0":0}}}'
    )
    assert ConsumerOffsetSerializeWrapper.from_json(wrapper.to_json()) == wrapper


def test_message_queue_keys_as_fastjson_writes_them() -> None:
    text = (
        b'{"consumeTps":1.5,"offsetTable":{'
        b'{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:'
        b'{"brokerOffset":10,"consumerOffset":7,"lastTimestamp":1700000000000},'
        b'{"brokerName":"broker-a","queueId":1,"topic":"TopicTest"}:'
        b'{"brokerOffset":5,"consumerOffset":5,"lastTimestamp":0}}}'
    )
    stats = ConsumeStats.from_json(text)
    assert stats.consume_tps == 1.5
    assert stats.offset_table == {
        MQ0: OffsetWrapper(10, 7, 1_700_000_000_000),
        MQ1: OffsetWrapper(5, 5, 0),
    }
    assert stats.total_diff() == 3
    # Written back as standard JSON: each key a string holding the queue's JSON, which
    # fastjson reads into a MessageQueue key too.
    written = orjson.loads(stats.to_json())
    key = '{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}'
    assert written["offsetTable"][key] == {
        "brokerOffset": 10,
        "consumerOffset": 7,
        "lastTimestamp": 1_700_000_000_000,
    }
    assert ConsumeStats.from_json(stats.to_json()) == stats


def test_topic_stats_and_reset_offsets_keyed_by_queue() -> None:
    table = TopicStatsTable({MQ0: TopicOffset(0, 42, 1), MQ1: TopicOffset(3, 4, 5)})
    assert TopicStatsTable.from_json(table.to_json()) == table
    fastjson = (
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"TopicTest"}:'
        b'{"lastUpdateTimestamp":5,"maxOffset":4,"minOffset":3}}}'
    )
    assert TopicStatsTable.from_json(fastjson).offset_table == {MQ1: TopicOffset(3, 4, 5)}
    reset = ResetOffsetBody.from_json(
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:100}}'
    )
    assert reset.offset_table == {MQ0: 100}
    assert ResetOffsetBody.from_json(reset.to_json()) == reset


def test_lock_bodies() -> None:
    request = LockBatchRequestBody("CID_ORDER", "127.0.0.1@1#1", {MQ1, MQ0})
    written = orjson.loads(request.to_json())
    assert written == {
        "clientId": "127.0.0.1@1#1",
        "consumerGroup": "CID_ORDER",
        "mqSet": [
            {"brokerName": "broker-a", "queueId": 0, "topic": "TopicTest"},
            {"brokerName": "broker-a", "queueId": 1, "topic": "TopicTest"},
        ],
    }
    assert LockBatchRequestBody.from_json(request.to_json()) == request
    unlock = UnlockBatchRequestBody.from_json(request.to_json())
    assert unlock.mq_set == {MQ0, MQ1}
    response = LockBatchResponseBody({MQ0})
    assert response.to_json() == (
        b'{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}]}'
    )
    assert LockBatchResponseBody.from_json(response.to_json()) == response


def test_topic_config_wrapper_and_topic_list() -> None:
    # topics.json: fastjson's pretty form (standard JSON).
    text = (
        '{\n\t"dataVersion":{\n\t\t"counter":2,\n\t\t"timestamp":1600000000000\n\t},\n'
        '\t"topicConfigTable":{\n\t\t"TopicTest":{\n\t\t\t"order":false,\n\t\t\t"perm":6,\n'
        '\t\t\t"readQueueNums":4,\n\t\t\t"topicFilterType":"SINGLE_TAG",\n'
        '\t\t\t"topicName":"TopicTest",\n\t\t\t"topicSysFlag":0,\n\t\t\t"writeQueueNums":4\n'
        "\t\t}\n\t}\n}"
    )
    wrapper = TopicConfigSerializeWrapper.from_json(text)
    assert wrapper.data_version == DataVersion(1_600_000_000_000, 2)
    assert wrapper.topic_config_table == {"TopicTest": TopicConfig("TopicTest", 4, 4, 6)}
    assert TopicConfigSerializeWrapper.from_json(wrapper.to_json()) == wrapper
    wrapper.data_version.next_version(1_600_000_000_001)
    assert wrapper.data_version == DataVersion(1_600_000_000_001, 3)
    topics = TopicList({"b", "a"}, "10.0.0.1:10911")
    assert topics.to_json() == b'{"brokerAddr":"10.0.0.1:10911","topicList":["a","b"]}'
    assert TopicList.from_json(b'{"topicList":["x"]}') == TopicList({"x"})
    assert TopicList({"x"}).to_json() == b'{"topicList":["x"]}'


def test_missing_members_take_rocketmq_defaults_and_unknown_ones_are_ignored() -> None:
    assert TopicConfig.from_json(b'{"topicName":"T","someFutureField":[1]}') == TopicConfig(
        "T", 16, 16, 6, TopicFilterType.SINGLE_TAG, 0, False
    )
    subscription = SubscriptionData.from_json(b'{"topic":"T","subString":null}')
    assert (subscription.sub_string, subscription.expression_type) == ("", "TAG")
    assert subscription.sub_version > 1_700_000_000_000  # Java's default: now
    consumer = ConsumerData.from_json(b"{}")
    assert consumer.consume_type is None and consumer.subscription_data_set == []
    assert TopicRouteData.from_json(b"{}") == TopicRouteData()
    assert (
        TopicRouteData().to_json() == b'{"brokerDatas":[],"filterServerTable":{},"queueDatas":[]}'
    )
    assert ResetOffsetBody.from_json(b'{"offsetTable":{{"topic":"T"}:1}}').offset_table == {
        MessageQueue("T", "", 0): 1
    }
    assert KVTable.from_json(b"{}") == KVTable()
    assert GetConsumerListByGroupResponseBody.from_json(b'{"consumerIdList":null}') == (
        GetConsumerListByGroupResponseBody()
    )


def test_enums_read_by_name_or_ordinal_and_write_by_name() -> None:
    by_name = ConsumerData.from_json(
        b'{"consumeType":"CONSUME_ACTIVELY","messageModel":"BROADCASTING",'
        b'"consumeFromWhere":"CONSUME_FROM_TIMESTAMP"}'
    )
    by_ordinal = ConsumerData.from_json(b'{"consumeType":0,"messageModel":0,"consumeFromWhere":5}')
    assert by_name == by_ordinal
    assert by_name.consume_type is ConsumeType.CONSUME_ACTIVELY
    assert by_name.message_model is MessageModel.BROADCASTING
    assert by_name.consume_from_where is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
    written = orjson.loads(by_ordinal.to_json())
    assert written["consumeType"] == "CONSUME_ACTIVELY"
    assert written["consumeFromWhere"] == "CONSUME_FROM_TIMESTAMP"


def test_heartbeat_round_trip_and_member_names() -> None:
    heartbeat = HeartbeatData(
        "10.0.0.9@4242#1",
        [ProducerData("PID")],
        [
            ConsumerData(
                "CID",
                ConsumeType.CONSUME_PASSIVELY,
                MessageModel.CLUSTERING,
                ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
                [SubscriptionData(False, "T", "a || b", {"b", "a"}, {98, 97}, 7, "TAG")],
                False,
            )
        ],
    )
    written = orjson.loads(heartbeat.to_json())
    assert written["clientID"] == "10.0.0.9@4242#1"
    (subscription,) = written["consumerDataSet"][0]["subscriptionDataSet"]
    assert subscription == {
        "classFilterMode": False,
        "codeSet": [97, 98],
        "expressionType": "TAG",
        "subString": "a || b",
        "subVersion": 7,
        "tagsSet": ["a", "b"],
        "topic": "T",
    }
    assert HeartbeatData.from_json(heartbeat.to_json()) == heartbeat


def test_route_data_round_trip() -> None:
    route = TopicRouteData(
        "broker-a:4",
        [QueueData("broker-a", 4, 4, 6, 0)],
        [BrokerData("c", "broker-a", {0: "h:1", 2: "h:2"})],
        {"h:1": ["f:1"]},
    )
    assert orjson.loads(route.to_json())["orderTopicConf"] == "broker-a:4"
    assert TopicRouteData.from_json(route.to_json()) == route


def test_register_broker_body_plain_and_compressed() -> None:
    body = RegisterBrokerBody(
        TopicConfigSerializeWrapper(
            {"A": TopicConfig("A", 4, 4, 6), "B": TopicConfig("B", 1, 2, 2)},
            DataVersion(1_700_000_000_000, 9),
        ),
        ["10.0.0.1:9999"],
    )
    assert RegisterBrokerBody.decode(body.encode(compressed=False), compressed=False) == body
    assert RegisterBrokerBody.decode(body.encode(compressed=True), compressed=True) == body


def _record(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def test_compressed_register_broker_body_in_rocketmq_layout() -> None:
    # Built by hand after RocketMQ 4.9.8's RegisterBrokerBody.encode(true): one zlib stream of
    # length-prefixed records.
    plain = (
        _record(b'{"counter":3,"timestamp":1700000000000}')
        + struct.pack(">i", 2)
        + _record(b"TopicTest 8 8 6 SINGLE_TAG")
        + _record(b"%RETRY%g 1 1 6 MULTI_TAG")
        + _record(b"[]")
    )
    body = RegisterBrokerBody.decode(zlib.compress(plain, 9), compressed=True)
    table = body.topic_config_serialize_wrapper.topic_config_table
    assert table == {
        "TopicTest": TopicConfig("TopicTest", 8, 8, 6),
        "%RETRY%g": TopicConfig("%RETRY%g", 1, 1, 6, TopicFilterType.MULTI_TAG),
    }
    assert body.topic_config_serialize_wrapper.data_version == DataVersion(1_700_000_000_000, 3)
    assert body.filter_server_list == []
    assert zlib.decompress(body.encode(compressed=True)) == plain


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not zlib", "not zlib data"),
        (zlib.compress(b"\x00\x00"), "ends early"),
        (zlib.compress(_record(b"{}") + b"\x00\x00\x00\x01" + _record(b"T 1 1")), "5 space"),
        (
            zlib.compress(_record(b"{}") + b"\x00\x00\x00\x01" + _record(b"T x 1 6 SINGLE_TAG")),
            "bad",
        ),
        (zlib.compress(_record(b"{}") + b"\x00\x00\x00\x00" + _record(b'{"a":1}')), "filterServer"),
        (zlib.compress(_record(b"{}") + b"\x00\x00\x00\x00" + _record(b"[1]")), "filterServer"),
    ],
)
def test_bad_compressed_register_broker_body(data: bytes, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        RegisterBrokerBody.decode(data, compressed=True)


def test_broker_stats_data_uses_rocketmq_member_names() -> None:
    """VIEW_BROKER_STATS_DATA's body as a RocketMQ broker writes it (fastjson, sorted)."""
    text = (
        b'{"statsDay":{"avgpt":2.0,"sum":10,"tps":0.0027},'
        b'"statsHour":{"avgpt":2.0,"sum":10,"tps":0.0166},'
        b'"statsMinute":{"avgpt":2.5,"sum":5,"tps":0.5}}'
    )
    data = BrokerStatsData.from_json(text)
    assert data.stats_minute == BrokerStatsItem(sum=5, tps=0.5, avgpt=2.5)
    assert data.stats_hour.sum == data.stats_day.sum == 10
    assert orjson.loads(data.to_json()) == orjson.loads(text)
    assert stats_key("TopicTest", "cg") == "TopicTest@cg"
