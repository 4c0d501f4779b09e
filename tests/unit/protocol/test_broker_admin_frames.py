"""mqadmin 4.9.8's broker requests as it frames them (JSON header, string extFields, the
AccessKey/Signature it always adds), and RocketMQ's answer bodies as fastjson writes them:
our headers read the requests, our bodies have RocketMQ's member names and read its text."""

from __future__ import annotations

import struct

import orjson

from orbitmq.common import MessageQueue
from orbitmq.protocol import (
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeQueueData,
    ConsumeStats,
    ConsumeStatsList,
    FrameDecoder,
    OffsetWrapper,
    QueryConsumeQueueResponseBody,
    RemotingCommand,
    RequestCode,
)
from orbitmq.protocol.header import (
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)

#: What mqadmin adds to every request from its tools.yml, ACL on or off.
SIGNED = {"AccessKey": "rocketmq2", "Signature": "x9Y0Zk3lS0dAzzh1m3Jv0HcRmWk="}


def mqadmin_frame(code: int, ext_fields: dict[str, str] | None, body: bytes = b"") -> bytes:
    """A request as RocketMQ 4.9.8's RemotingCommand.encode writes it: fastjson's header
    (members sorted, extFields null when the request has no custom header)."""
    header: dict[str, object] = {
        "code": code,
        "flag": 0,
        "language": "JAVA",
        "opaque": 42,
        "serializeTypeCurrentRPC": "JSON",
        "version": 409,
    }
    if ext_fields is not None:
        header["extFields"] = {**ext_fields, **SIGNED}
    header_bytes = orjson.dumps(header, option=orjson.OPT_SORT_KEYS)
    return (
        struct.pack(">ii", 4 + len(header_bytes) + len(body), len(header_bytes))
        + header_bytes
        + body
    )


def decode(frame: bytes) -> RemotingCommand:
    (command,) = FrameDecoder().feed(frame)
    return command


def test_view_broker_stats_data_request() -> None:
    command = decode(
        mqadmin_frame(
            RequestCode.VIEW_BROKER_STATS_DATA,
            {"statsName": "GROUP_GET_NUMS", "statsKey": "TopicTest@please_rename_unique"},
        )
    )
    header = ViewBrokerStatsDataRequestHeader.from_ext_fields(command.ext_fields)
    assert (header.stats_name, header.stats_key) == (
        "GROUP_GET_NUMS",
        "TopicTest@please_rename_unique",
    )
    assert ViewBrokerStatsDataRequestHeader(stats_name="A", stats_key="B").to_ext_fields() == {
        "statsName": "A",
        "statsKey": "B",
    }


def test_query_consume_queue_request() -> None:
    fields = {
        "topic": "TopicTest",
        "queueId": "3",
        "index": "1024",
        "count": "10",
        "consumerGroup": "cg",
    }
    command = decode(mqadmin_frame(RequestCode.QUERY_CONSUME_QUEUE, fields))
    header = QueryConsumeQueueRequestHeader.from_ext_fields(command.ext_fields)
    assert (header.topic, header.queue_id, header.index, header.count) == ("TopicTest", 3, 1024, 10)
    assert header.consumer_group == "cg"
    without_group = {k: v for k, v in fields.items() if k != "consumerGroup"}
    command = decode(mqadmin_frame(RequestCode.QUERY_CONSUME_QUEUE, without_group))
    assert QueryConsumeQueueRequestHeader.from_ext_fields(command.ext_fields).consumer_group is None
    assert QueryConsumeQueueRequestHeader(
        topic="T", queue_id=0, index=5, count=2, consumer_group=None
    ).to_ext_fields() == {"topic": "T", "queueId": "0", "index": "5", "count": "2"}


def test_broker_consume_stats_request() -> None:
    command = decode(mqadmin_frame(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"}))
    assert GetConsumeStatsInBrokerHeader.from_ext_fields(command.ext_fields).is_order is False


def test_requests_without_a_header_and_the_update_body() -> None:
    for code in (
        RequestCode.GET_BROKER_CONFIG,
        RequestCode.GET_BROKER_RUNTIME_INFO,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
    ):
        assert decode(mqadmin_frame(code, None)).code == code
    # MixAll.properties2String: "key=value\n" per property.
    body = b"fileReservedTime=48\nbrokerPermission=6\n"
    command = decode(mqadmin_frame(RequestCode.UPDATE_BROKER_CONFIG, {}, body))
    assert command.body == body


def test_broker_stats_data_as_fastjson_writes_it() -> None:
    fastjson = (
        b'{"statsDay":{"avgpt":1.5,"sum":300,"tps":0.0034722222222222225},'
        b'"statsHour":{"avgpt":1.5,"sum":30,"tps":0.05},'
        b'"statsMinute":{"avgpt":1.0,"sum":6,"tps":0.1}}'
    )
    data = BrokerStatsData.from_json(fastjson)
    assert data.stats_minute == BrokerStatsItem(sum=6, tps=0.1, avgpt=1.0)
    assert data.stats_day.sum == 300
    assert orjson.loads(data.to_json()) == orjson.loads(fastjson)


def test_consume_stats_list_with_fastjsons_object_keys() -> None:
    fastjson = (
        b'{"brokerAddr":"192.168.0.2:10911","consumeStatsList":[{"cg":[{"consumeTps":0.5,'
        b'"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:'
        b'{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1700000000000}}}]},'
        b'{"idle":[]}],"totalDiff":6}'
    )
    stats = ConsumeStatsList.from_json(fastjson)
    assert stats.broker_addr == "192.168.0.2:10911"
    assert stats.total_diff == 6
    (cg,) = stats.consume_stats_list[0]["cg"]
    wrapper = cg.offset_table[MessageQueue("T", "broker-a", 0)]
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (10, 4)
    assert stats.consume_stats_list[1] == {"idle": []}
    ours = orjson.loads(
        ConsumeStatsList(
            consume_stats_list=[
                {
                    "cg": [
                        ConsumeStats(
                            offset_table={MessageQueue("T", "b", 0): OffsetWrapper(1, 0, 0)}
                        )
                    ]
                }
            ],
            broker_addr="a:1",
            total_diff=1,
        ).to_json()
    )
    assert set(ours) == {"brokerAddr", "consumeStatsList", "totalDiff"}
    assert set(ours["consumeStatsList"][0]["cg"][0]) == {"consumeTps", "offsetTable"}


def test_query_consume_queue_body_member_names() -> None:
    fastjson = (
        b'{"filterData":"cg@T is not online!","maxQueueIndex":3,"minQueueIndex":0,'
        b'"queueData":[{"eval":false,"physicOffset":0,"physicSize":180,"tagsCode":2598919}]}'
    )
    body = QueryConsumeQueueResponseBody.from_json(fastjson)
    assert body.queue_data == [
        ConsumeQueueData(physic_offset=0, physic_size=180, tags_code=2598919)
    ]
    assert body.subscription_data is None
    assert orjson.loads(body.to_json()) == orjson.loads(fastjson)
    full = ConsumeQueueData(1, 2, 3, extend_data_json="{}", bit_map="01", eval=True, msg="m")
    assert set(orjson.loads(full.to_json())) == {
        "physicOffset",
        "physicSize",
        "tagsCode",
        "extendDataJson",
        "bitMap",
        "eval",
        "msg",
    }
