"""The dataclass mapping behind every body: names, leniency where fastjson is lenient, and
errors that name the path of the bad value."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson
import pytest

from orbitmq.common import OrbitError
from orbitmq.protocol import ProtocolError
from orbitmq.protocol.body import (
    Body,
    BodyError,
    ClusterInfo,
    ConsumerData,
    ConsumeStats,
    ConsumeType,
    HeartbeatData,
    LockBatchRequestBody,
    SubscriptionData,
    TopicConfig,
    TopicRouteData,
    json_name,
)
from orbitmq.protocol.body.json_codec import camel_case, codec_for


@dataclass(slots=True)
class Sample(Body):
    plain_name: int = 0
    odd: str = field(default="", metadata=json_name("ODDName"))
    maybe: float | None = None
    frozen: frozenset[int] = frozenset()
    by_type: dict[ConsumeType, list[int]] = field(default_factory=dict)


def test_member_names_sorted_and_none_left_out() -> None:
    sample = Sample(1, "x", None, frozenset({3, 1}), {ConsumeType.CONSUME_PASSIVELY: [2]})
    assert sample.to_json() == (
        b'{"ODDName":"x","byType":{"CONSUME_PASSIVELY":[2]},"frozen":[1,3],"plainName":1}'
    )
    assert Sample.from_json(sample.to_json()) == sample
    assert Sample.from_json(b'{"maybe":2}').maybe == 2.0
    assert camel_case("lock_ok_mq_set") == "lockOkMqSet"
    assert codec_for(Sample) is codec_for(Sample)


def test_unsupported_types_are_a_programming_error() -> None:
    @dataclass
    class Tuples(Body):
        pair: tuple[int, int] = (0, 0)

    @dataclass
    class Either(Body):
        either: int | str = 0

    @dataclass
    class FloatKeys(Body):
        table: dict[float, int] = field(default_factory=dict)

    for cls in (Tuples, Either, FloatKeys):
        with pytest.raises(TypeError):
            cls.from_json(b"{}")


def test_fastjson_leniency() -> None:
    # Numbers as strings (the C++ client's subVersion), booleans as strings or 0/1,
    # integral floats, integers where a string is expected.
    assert SubscriptionData.from_json(b'{"subVersion":" 12 "}').sub_version == 12
    assert TopicConfig.from_json(b'{"order":"true","perm":6.0}').order is True
    assert TopicConfig.from_json(b'{"order":1}').order is True
    assert TopicConfig.from_json(b'{"topicName":42}').topic_name == "42"
    assert ConsumeStats.from_json(b'{"consumeTps":"2.5"}').consume_tps == 2.5


@pytest.mark.parametrize(
    ("cls", "text", "path", "reason"),
    [
        (
            HeartbeatData,
            b'{"consumerDataSet":[{"subscriptionDataSet":[{},{"subVersion":[1]}]}]}',
            "HeartbeatData.consumerDataSet[0].subscriptionDataSet[1].subVersion",
            "expected an integer, got a list",
        ),
        (
            TopicRouteData,
            b'{"brokerDatas":[{"brokerAddrs":{0:"a",x:"b"}}]}',
            'TopicRouteData.brokerDatas[0].brokerAddrs["x"]',
            "expected an integer, got the string 'x'",
        ),
        (
            ClusterInfo,
            b'{"clusterAddrTable":{"c":["a",{}]}}',
            'ClusterInfo.clusterAddrTable["c"][1]',
            "expected a string, got an object",
        ),
        (
            ConsumeStats,
            b'{"offsetTable":{"nope":{}}}',
            'ConsumeStats.offsetTable["nope"]',
            "expected a MessageQueue as JSON, got the string 'nope'",
        ),
        (
            LockBatchRequestBody,
            b'{"mqSet":[{"queueId":"abc"}]}',
            "LockBatchRequestBody.mqSet[0].queueId",
            "expected an integer, got the string 'abc'",
        ),
        (
            ConsumerData,
            b'{"consumeType":"PUSH"}',
            "ConsumerData.consumeType",
            "expected a ConsumeType (CONSUME_ACTIVELY, CONSUME_PASSIVELY, CONSUME_POP, "
            "or its ordinal), "
            "got the string 'PUSH'",
        ),
        (ConsumerData, b'{"messageModel":2}', "ConsumerData.messageModel", "got the number 2"),
        (TopicConfig, b'{"order":"maybe"}', "TopicConfig.order", "expected a boolean"),
        (TopicConfig, b'{"readQueueNums":true}', "TopicConfig.readQueueNums", "a boolean"),
        (TopicConfig, b'{"topicName":false}', "TopicConfig.topicName", "expected a string"),
        (TopicRouteData, b"[]", "TopicRouteData", "expected a TopicRouteData object, got a list"),
        (TopicRouteData, b'{"queueDatas":{}}', "TopicRouteData.queueDatas", "expected a list"),
        (TopicRouteData, b'{"queueDatas":[null]}', "TopicRouteData.queueDatas[0]", "got null"),
        (TopicConfig, b'{"perm":"1_0"}', "TopicConfig.perm", "expected an integer"),
        (TopicConfig, b'{"perm":18446744073709551615}', "TopicConfig.perm", "fits in 64 bits"),
        (ConsumeStats, b'{"consumeTps":"nan"}', "ConsumeStats.consumeTps", "a finite number"),
        (
            ConsumeStats,
            b'{"consumeTps":"fast"}',
            "ConsumeStats.consumeTps",
            "expected a finite number",
        ),
    ],
)
def test_wrong_types_name_the_path(cls: type[Body], text: bytes, path: str, reason: str) -> None:
    with pytest.raises(BodyError) as raised:
        cls.from_json(text)
    error = raised.value
    assert error.path == path
    assert reason in error.reason
    assert str(error) == f"{path}: {error.reason}"
    assert isinstance(error, ProtocolError) and isinstance(error, OrbitError)


def test_from_value_takes_parsed_json() -> None:
    value = orjson.loads(b'{"topicName":"T","perm":2}')
    assert TopicConfig.from_value(value).perm == 2
    assert TopicConfig.from_value(value).to_value()["topicName"] == "T"
