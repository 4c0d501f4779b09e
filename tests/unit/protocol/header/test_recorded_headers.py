"""Every header in the recordings (real RocketMQ 4.9.8 with Java 4.9.8, C++ 2.1.0 and C++ 1.x
clients) parses with the matching header class, and Java-written headers come back byte for
byte: the Java side writes every non-null field, so a missing or misnamed field shows."""

from __future__ import annotations

import pytest

from orbitmq.protocol.header import (
    CommandHeader,
    GetConsumerListByGroupRequestHeader,
    GetRouteInfoRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    RegisterBrokerRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from tests.unit.protocol.header.recordings import Exchange

REQUESTS: dict[int, type[CommandHeader]] = {
    10: SendMessageRequestHeader,
    310: SendMessageRequestHeaderV2,
    11: PullMessageRequestHeader,
    105: GetRouteInfoRequestHeader,
    14: QueryConsumerOffsetRequestHeader,
    15: UpdateConsumerOffsetRequestHeader,
    38: GetConsumerListByGroupRequestHeader,
    35: UnregisterClientRequestHeader,
    103: RegisterBrokerRequestHeader,
    40: NotifyConsumerIdsChangedRequestHeader,
}
#: Successful responses that carry a header.
RESPONSES: dict[int, type[CommandHeader]] = {
    10: SendMessageResponseHeader,
    310: SendMessageResponseHeader,
    11: PullMessageResponseHeader,
    14: QueryConsumerOffsetResponseHeader,
}
#: Keys the clients add to every request, outside any header.
CLIENT_EXTRAS = {"AccessKey", "Signature", "OnsChannel"}
#: Keys RocketMQ's send processor adds to the response, outside SendMessageResponseHeader.
SEND_RESPONSE_EXTRAS = {"MSG_REGION", "TRACE_ON"}

#: SendMessageRequestHeaderV2's keys, read from RocketMQ 4.9.8's
#: createSendMessageRequestHeaderV1 (key -> SendMessageRequestHeader key).
V2_TO_V1 = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
    "n": "bname",
}
V1_TO_V2 = {v1: v2 for v2, v1 in V2_TO_V1.items()}


def _of(exchanges: list[Exchange], code: int, recording: str = "") -> list[Exchange]:
    found = [e for e in exchanges if e.code == code and recording in e.recording]
    assert found, f"no recorded request with code {code} in {recording or 'any recording'}"
    return found


def _one(exchanges: list[Exchange], code: int, recording: str) -> Exchange:
    (exchange,) = _of(exchanges, code, recording)
    return exchange


@pytest.mark.parametrize("code", sorted(REQUESTS))
def test_every_recorded_request_parses_and_round_trips(
    exchanges: list[Exchange], code: int
) -> None:
    cls = REQUESTS[code]
    for exchange in _of(exchanges, code):
        header = cls.from_ext_fields(exchange.request)
        written = header.to_ext_fields()
        assert cls.from_ext_fields(written) == header
        assert set(written) <= set(exchange.request) - CLIENT_EXTRAS
        if exchange.language == "JAVA":
            assert written == exchange.request, exchange.recording


@pytest.mark.parametrize("code", sorted(RESPONSES))
def test_every_recorded_response_parses_as_the_broker_wrote_it(
    exchanges: list[Exchange], code: int
) -> None:
    cls = RESPONSES[code]
    answered = [e for e in _of(exchanges, code) if e.response_code == 0 and e.response]
    assert answered
    for exchange in answered:
        assert exchange.response is not None
        header = cls.from_ext_fields(exchange.response)
        expected = {k: v for k, v in exchange.response.items() if k not in SEND_RESPONSE_EXTRAS}
        assert header.to_ext_fields() == expected


def test_cpp_2_1_send_v2_frame(exchanges: list[Exchange]) -> None:
    exchange = _one(exchanges, 310, "cvs-2.1.0.3")
    header = SendMessageRequestHeaderV2.from_ext_fields(exchange.request)
    assert header == SendMessageRequestHeaderV2(
        producer_group="PID_PROBE",
        topic="TopicCpp2",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1795259198033,
        flag=0,
        properties="KEYS\x01k1\x02TAGS\x01TagA\x02UNIQ_KEY\x01"
        "7F000001270204AAD6F4696182510000\x02WAIT\x01true\x02probe\x01yes\x02",
        reconsume_times=0,
        unit_mode=False,  # sent as "0"
        max_reconsume_times=16,
        batch=False,  # sent as "0"
        broker_name=None,
    )


def test_java_send_v2_frame(exchanges: list[Exchange]) -> None:
    exchange = _one(exchanges, 310, "java-4.9.8")
    header = SendMessageRequestHeaderV2.from_ext_fields(exchange.request)
    assert (header.topic, header.queue_id, header.broker_name) == ("TopicJava", 2, "broker-a")
    assert (header.born_timestamp, header.max_reconsume_times) == (1795259185853, None)
    assert (header.unit_mode, header.batch) == (False, False)  # sent as "false"
    assert header.properties is not None
    assert "UNIQ_KEY\x017F000001241530946E09696152BD0000" in header.properties


def test_cpp_1_x_send_v1_frame(exchanges: list[Exchange]) -> None:
    exchange = _one(exchanges, 10, "rocketmq-0.4.4")
    header = SendMessageRequestHeader.from_ext_fields(exchange.request)
    assert header == SendMessageRequestHeader(
        producer_group="PID_PROBE",
        topic="TopicCpp1",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1795259195554,
        flag=0,
        properties="KEYS\x01k1\x02TAGS\x01TagA\x02UNIQ_KEY\x01"
        "0100007F00003A94000022C3BE6E0100\x02WAIT\x01true\x02probe\x01yes\x02",
        reconsume_times=0,
        unit_mode=False,
        batch=False,
    )


@pytest.mark.parametrize("recording", ["java-4.9.8", "cvs-2.1.0.3"])
def test_recorded_v2_frames_mean_what_their_v1_names_say(
    exchanges: list[Exchange], recording: str
) -> None:
    exchange = _one(exchanges, 310, recording)
    as_v1 = {V2_TO_V1.get(k, k): v for k, v in exchange.request.items()}
    v2 = SendMessageRequestHeaderV2.from_ext_fields(exchange.request)
    assert v2.to_v1() == SendMessageRequestHeader.from_ext_fields(as_v1)
    assert v2.to_v1().to_v2() == v2


def test_recorded_v1_frame_means_what_its_v2_letters_say(exchanges: list[Exchange]) -> None:
    exchange = _one(exchanges, 10, "rocketmq-0.4.4")
    as_v2 = {V1_TO_V2.get(k, k): v for k, v in exchange.request.items()}
    v1 = SendMessageRequestHeader.from_ext_fields(exchange.request)
    assert v1.to_v2() == SendMessageRequestHeaderV2.from_ext_fields(as_v2)
    assert set(v1.to_v2().to_ext_fields()) <= set(V2_TO_V1)


def test_send_responses(exchanges: list[Exchange]) -> None:
    found = {}
    for code in (10, 310):
        for exchange in _of(exchanges, code):
            assert exchange.response is not None
            header = SendMessageResponseHeader.from_ext_fields(exchange.response)
            found[exchange.recording.split("__")[1]] = header
    assert found["java-4.9.8.frames.jsonl"] == SendMessageResponseHeader(
        msg_id="7F00000100002A9F0000000000000000", queue_id=2, queue_offset=0
    )
    assert found["py-rocketmq-0.4.4.frames.jsonl"].msg_id == "7F00000100002A9F00000000000000DC"
    cvs = found["py-rocketmq-python-cvs-2.1.0.3.frames.jsonl"]
    assert (cvs.msg_id, cvs.queue_id, cvs.queue_offset) == (
        "7F00000100002A9F00000000000001B2",
        0,
        0,
    )


def test_pull_frames(exchanges: list[Exchange]) -> None:
    for exchange in _of(exchanges, 11):
        header = PullMessageRequestHeader.from_ext_fields(exchange.request)
        assert header.consumer_group == "CID_PROBE"
        assert (header.max_msg_nums, header.suspend_timeout_millis) == (32, 15000)
        if exchange.language == "JAVA":
            assert (header.sys_flag, header.expression_type) == (2, "TAG")
            assert (header.subscription, header.broker_name) == (None, "broker-a")
        else:
            assert (header.sys_flag, header.expression_type) == (6, None)
            assert (header.subscription, header.broker_name) == ("*", None)
        if exchange.response:
            answer = PullMessageResponseHeader.from_ext_fields(exchange.response)
            assert answer == PullMessageResponseHeader(
                suggest_which_broker_id=0, next_begin_offset=1, min_offset=0, max_offset=1
            )


def test_route_queries_ignore_the_signature_fields(exchanges: list[Exchange]) -> None:
    topics = set()
    for exchange in _of(exchanges, 105):
        header = GetRouteInfoRequestHeader.from_ext_fields(exchange.request)
        assert header.accept_standard_json_only is None
        topics.add(header.topic)
    assert {"TopicJava", "TopicCpp1", "TopicCpp2", "TBW102", "%RETRY%CID_PROBE"} <= topics


def test_offset_frames(exchanges: list[Exchange]) -> None:
    queried = [
        QueryConsumerOffsetRequestHeader.from_ext_fields(e.request) for e in _of(exchanges, 14)
    ]
    assert {(h.topic, h.queue_id) for h in queried} >= {("TopicCpp2", q) for q in range(4)}
    committed = [
        UpdateConsumerOffsetRequestHeader.from_ext_fields(e.request) for e in _of(exchanges, 15)
    ]
    assert ("TopicCpp1", 0, 1) in {(h.topic, h.queue_id, h.commit_offset) for h in committed}
    for exchange in _of(exchanges, 14):
        if exchange.response:
            assert QueryConsumerOffsetResponseHeader.from_ext_fields(exchange.response).offset == 0


def test_unregister_frames(exchanges: list[Exchange]) -> None:
    cpp = UnregisterClientRequestHeader.from_ext_fields(
        _of(exchanges, 35, "rocketmq-0.4.4")[0].request
    )
    assert cpp == UnregisterClientRequestHeader(
        client_id="9910-127.0.0.1@DEFAULT", producer_group="PID_PROBE", consumer_group=""
    )
    java = [UnregisterClientRequestHeader.from_ext_fields(e.request) for e in _of(exchanges, 35)]
    assert (
        UnregisterClientRequestHeader(
            client_id="127.0.0.1@9400#1164173566194", consumer_group="CID_PROBE"
        )
        in java
    )


def test_broker_registration_frames(exchanges: list[Exchange]) -> None:
    for exchange in _of(exchanges, 103):
        header = RegisterBrokerRequestHeader.from_ext_fields(exchange.request)
        assert (header.broker_name, header.broker_id, header.cluster_name) == (
            "broker-a",
            0,
            "DefaultCluster",
        )
        assert (header.broker_addr, header.ha_server_addr) == ("127.0.0.1:10911", "127.0.0.1:10912")
        assert header.compressed is False
        assert header.body_crc32 > 0
