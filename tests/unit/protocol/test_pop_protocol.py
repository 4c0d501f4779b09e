"""POP's wire pieces: the headers' extFields keys (RocketMQ 5's), the batch-ack body's bit
set (Java BitSet bytes, base64), the extra info string and the POP answer's info strings."""

from __future__ import annotations

import base64

import pytest

from orbitmq.common.key_builder import (
    build_cluster_revive_topic,
    build_pop_retry_topic,
    parse_normal_topic,
)
from orbitmq.protocol import (
    AckMessageRequestHeader,
    BatchAck,
    BatchAckMessageRequestBody,
    ChangeInvisibleTimeRequestHeader,
    HeaderError,
    NotificationResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    RequestCode,
    ResponseCode,
    bit_set_bytes,
    bit_set_indexes,
)
from orbitmq.protocol.body.errors import BodyError
from orbitmq.protocol.pop_extra_info import (
    ExtraInfo,
    ExtraInfoError,
    msg_offset_entry,
    order_count_entry,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    queue_key,
    queue_offset_key,
    start_offset_entry,
)


def test_codes_are_rocketmq_5s() -> None:
    codes = {code.name: code.value for code in RequestCode if code.value >= 200050}
    assert codes == {
        "POP_MESSAGE": 200050,
        "ACK_MESSAGE": 200051,
        "BATCH_ACK_MESSAGE": 200151,
        "PEEK_MESSAGE": 200052,
        "CHANGE_MESSAGE_INVISIBLETIME": 200053,
        "NOTIFICATION": 200054,
        "POLLING_INFO": 200055,
    }
    assert [ResponseCode[name].value for name in ("POLLING_FULL", "POLLING_TIMEOUT")] == [209, 210]
    assert ResponseCode["INVALID_PARAMETER"].value == 29


def test_pop_request_header_keys_and_round_trip() -> None:
    ext = {
        "consumerGroup": "g",
        "topic": "t",
        "queueId": "-1",
        "maxMsgNums": "32",
        "invisibleTime": "60000",
        "pollTime": "15000",
        "bornTime": "1700000000000",
        "initMode": "1",
        "expType": "TAG",
        "exp": "a || b",
        "order": "true",
        "attemptId": "x-1",
    }
    header = PopMessageRequestHeader.from_ext_fields(ext)
    assert header.queue_id == -1 and header.order and header.init_mode == 1
    assert header.to_ext_fields() == ext
    assert PopMessageRequestHeader.from_ext_fields({**ext, "order": "false"}).order is False


def test_pop_request_header_refuses_bad_values() -> None:
    base = {
        "consumerGroup": "g",
        "topic": "t",
        "queueId": "0",
        "maxMsgNums": "1",
        "invisibleTime": "1000",
        "pollTime": "0",
        "bornTime": "0",
        "initMode": "0",
    }
    with pytest.raises(HeaderError, match="maxMsgNums"):
        PopMessageRequestHeader.from_ext_fields({**base, "maxMsgNums": "abc"})
    with pytest.raises(HeaderError, match="consumerGroup is required"):
        PopMessageRequestHeader.from_ext_fields(
            {k: v for k, v in base.items() if k != "consumerGroup"}
        )


def test_response_and_ack_headers() -> None:
    response = PopMessageResponseHeader(
        pop_time=5, invisible_time=6, revive_qid=7, rest_num=8, start_offset_info="0 1 2"
    )
    assert response.to_ext_fields() == {
        "popTime": "5",
        "invisibleTime": "6",
        "reviveQid": "7",
        "restNum": "8",
        "startOffsetInfo": "0 1 2",
    }
    ack = AckMessageRequestHeader(
        consumer_group="g", topic="t", queue_id=1, extra_info="0 1 2 3 0 b 1 4", offset=4
    )
    assert set(ack.to_ext_fields()) == {"consumerGroup", "topic", "queueId", "extraInfo", "offset"}
    change = ChangeInvisibleTimeRequestHeader.from_ext_fields(
        {**ack.to_ext_fields(), "invisibleTime": "3000"}
    )
    assert change.invisible_time == 3000
    assert NotificationResponseHeader(has_msg=True).to_ext_fields() == {
        "hasMsg": "true",
        "pollingFull": "false",
    }


def test_bit_set_is_java_bitset_bytes() -> None:
    # Java: BitSet with bits 0 and 9 -> toByteArray() == {0x01, 0x02}
    assert bit_set_bytes([0, 9]) == b"\x01\x02"
    assert bit_set_bytes([]) == b""
    assert bit_set_indexes(b"\x01\x02\x00") == [0, 9]


def test_batch_ack_body_round_trip() -> None:
    ack = BatchAck(consumer_group="g", topic="t", retry="1", start_offset=100, queue_id=2)
    ack.set_offsets([100, 103, 131])
    body = BatchAckMessageRequestBody(broker_name="b", acks=[ack])
    wire = body.to_json()
    assert b'"so":100' in wire and b'"c":"g"' in wire and b'"r":"1"' in wire
    back = BatchAckMessageRequestBody.from_json(wire)
    assert back.acks[0].acked_offsets() == [100, 103, 131]
    assert back.acks[0].bit_set == base64.b64encode(bit_set_bytes([0, 3, 31])).decode()


def test_batch_ack_bad_bit_set_is_a_clear_error() -> None:
    with pytest.raises(BodyError, match=r"BatchAck\.b"):
        BatchAck(bit_set="%%not base64").acked_offsets()


def test_extra_info_round_trip_and_forms() -> None:
    info = ExtraInfo.build(
        ck_queue_offset=10,
        pop_time=1000,
        invisible_time=30000,
        revive_qid=3,
        topic="%RETRY%g_t",
        broker_name="broker-a",
        queue_id=0,
        queue_offset=12,
    )
    assert str(info) == "10 1000 30000 3 1 broker-a 0 12"
    assert ExtraInfo.parse(str(info)) == info
    assert info.real_topic("t", "g") == "%RETRY%g_t"
    assert info.revive_time == 31000 and not info.is_order
    seven = ExtraInfo.parse("10 1000 30000 999 0 broker-a 0")
    assert seven.queue_offset is None and seven.is_order
    changed = info.changed(12, 5000, 100, 3)
    assert str(changed) == "12 5000 100 3 1 broker-a 0 12"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "1 fields"),
        ("1 2 3", "3 fields"),
        ("a 1000 30000 3 0 b 0 1", "check point offset"),
        ("1 1000 30000 3 7 b 0 1", "retry mark"),
        ("1 1000 30000 3 0  0 1", "no broker name"),
        ("1 1000 30000 3 0 b 0 99999999999999999999", "queue offset"),
    ],
)
def test_forged_extra_info_is_a_clear_error(text: str, problem: str) -> None:
    with pytest.raises(ExtraInfoError, match=problem):
        ExtraInfo.parse(text)


def test_pop_answer_infos() -> None:
    starts = ";".join([start_offset_entry("t", 0, 5), start_offset_entry("%RETRY%g_t", 0, 7)])
    assert parse_start_offset_info(starts) == {"0@0": 5, "1@0": 7}
    assert queue_key("%RETRY%g_t", 0) == "1@0"
    offsets = msg_offset_entry("t", 1, [5, 6, 9])
    assert offsets == "0 1 5,6,9"
    assert parse_msg_offset_info(offsets) == {"0@1": [5, 6, 9]}
    counts = order_count_entry("t", 1, 9, 2)
    assert parse_order_count_info(counts) == {queue_offset_key("t", 1, 9): 2}
    assert parse_start_offset_info(None) == {} and parse_start_offset_info("") == {}
    with pytest.raises(ExtraInfoError, match="twice"):
        parse_start_offset_info("0 0 1;0 0 2")


def test_key_builder_names() -> None:
    assert build_cluster_revive_topic("DefaultCluster") == "rmq_sys_REVIVE_LOG_DefaultCluster"
    assert build_pop_retry_topic("t", "g") == "%RETRY%g_t"
    assert build_pop_retry_topic("t", "g", retry_v2=True) == "%RETRY%g+t"
    assert parse_normal_topic("%RETRY%g_t", "g") == "t"
    assert parse_normal_topic("%RETRY%g+t", "g") == "t"
    assert parse_normal_topic("t", "g") == "t"
