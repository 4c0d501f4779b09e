"""The field mapping between gRPC messages and the broker's (both ways), and the receipt
handle's form: pure functions, checked field by field."""

from __future__ import annotations

import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.timestamp_pb2 import Timestamp

from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.topic_message_type import TopicMessageType, message_type_of
from orbitmq.protocol.pop_extra_info import ExtraInfo
from orbitmq.proxy.grpc_status import GrpcProxyError
from orbitmq.proxy.message_builder import build_message
from orbitmq.proxy.message_converter import (
    message_properties,
    message_sys_flag,
    timestamp_ms,
)
from orbitmq.proxy.receipt_handle import decode_receipt_handle
from orbitmq.proxy.send_message_activity import consistent_hash
from orbitmq.proxy.v2 import definition_pb2 as d


def grpc_message(**system: object) -> d.Message:
    message = d.Message(topic=d.Resource(name="T"), body=b"b")
    message.system_properties.message_id = "ID1"
    for key, value in system.items():
        field = getattr(message.system_properties, key)
        if hasattr(field, "CopyFrom"):
            field.CopyFrom(value)
        elif hasattr(field, "extend"):
            field.extend(value)
        else:
            setattr(message.system_properties, key, value)
    return message


def test_system_properties_become_remoting_properties() -> None:
    message = grpc_message(
        tag="TagA",
        keys=["k1", "k2"],
        message_group="g1",
        delivery_timestamp=Timestamp(seconds=1_800_000_000, nanos=5_000_000),
        trace_context="tc",
        delivery_attempt=3,
    )
    message.user_properties["color"] = "red"
    properties = message_properties(message, "T")
    assert properties == {
        "color": "red",
        mc.PROPERTY_TAGS: "TagA",
        mc.PROPERTY_KEYS: "k1 k2",
        mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "ID1",
        mc.PROPERTY_TIMER_DELIVER_MS: "1800000000005",
        mc.PROPERTY_RECONSUME_TIME: "3",
        mc.PROPERTY_PRODUCER_GROUP: "T",
        mc.PROPERTY_SHARDING_KEY: "g1",
        "TRACE_CONTEXT": "tc",
    }


def test_transactional_and_compressed_messages() -> None:
    message = grpc_message(
        message_type=d.TRANSACTION,
        orphaned_transaction_recovery_duration=Duration(seconds=7),
        body_encoding=d.GZIP,
    )
    properties = message_properties(message, "T")
    assert properties[mc.PROPERTY_TRANSACTION_PREPARED] == "true"
    assert properties[mc.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS] == "7"
    assert message_sys_flag(message) == sf.COMPRESSED_FLAG | sf.TRANSACTION_PREPARED_TYPE
    assert message_type_of(properties) is TopicMessageType.TRANSACTION


def test_refused_properties() -> None:
    reserved = grpc_message()
    reserved.user_properties[mc.PROPERTY_KEYS] = "x"
    with pytest.raises(GrpcProxyError, match="property is used by system: KEYS") as caught:
        message_properties(reserved, "T")
    assert caught.value.code == d.ILLEGAL_MESSAGE_PROPERTY_KEY
    with pytest.raises(GrpcProxyError, match="message id is empty"):
        message_properties(grpc_message(message_id=""), "T")


def test_delivery_timestamp_in_milliseconds_slipped_into_seconds() -> None:
    # The official Python client 5.1.2 copies a user's milliseconds into ``seconds``.
    assert timestamp_ms(1_800_000_000, 0) == 1_800_000_000_000
    assert timestamp_ms(1_800_000_000_123, 0) == 1_800_000_000_123


def test_stored_message_to_grpc() -> None:
    stored = MessageExt(
        "T",
        b"body",
        properties={
            mc.PROPERTY_TAGS: "TagA",
            mc.PROPERTY_KEYS: "k1 k2",
            mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: "ID1",
            mc.PROPERTY_SHARDING_KEY: "g1",
            mc.PROPERTY_POP_CK: "0 1 30000 0 0 broker-a 1 5 1234",
            "color": "red",
        },
    )
    stored.queue_id, stored.queue_offset, stored.reconsume_times = 1, 5, 2
    stored.born_timestamp, stored.store_timestamp = 1000, 2000
    stored.born_host, stored.store_host = ("10.0.0.1", 5000), ("10.0.0.2", 10911)
    message = build_message(stored)
    system = message.system_properties
    assert (system.tag, list(system.keys), system.message_id) == ("TagA", ["k1", "k2"], "ID1")
    assert (system.message_group, system.message_type) == ("g1", d.FIFO)
    assert system.receipt_handle == "0 1 30000 0 0 broker-a 1 5 1234"
    assert (system.queue_id, system.queue_offset, system.delivery_attempt) == (1, 5, 3)
    assert (system.born_host, system.store_host) == ("10.0.0.1:5000", "10.0.0.2:10911")
    assert system.store_timestamp.ToMilliseconds() == 2000
    assert system.body_digest.type == d.MD5
    assert system.body_digest.checksum == "841A2D689AD86BD1611447453C22C6FC"
    assert dict(message.user_properties) == {"color": "red"}


def test_receipt_handle() -> None:
    handle = decode_receipt_handle("3 1000 30000 2 0 broker-a 1 5 1234")
    assert handle.extra == ExtraInfo(3, 1000, 30000, 2, "0", "broker-a", 1, 5)
    assert (handle.commit_log_offset, handle.queue_offset) == (1234, 5)
    assert handle.encode() == "3 1000 30000 2 0 broker-a 1 5 1234"
    assert handle.is_expired(31_000) and not handle.is_expired(30_999)
    # Eight fields are a handle without its commit log offset, as RocketMQ reads them.
    assert decode_receipt_handle("3 1000 30000 2 0 broker-a 1 5").commit_log_offset == -1
    for forged in ("", "x", "3 1000 30000 2 0 broker-a 1", "3 1000 30000 2 9 b 1 5 1"):
        with pytest.raises(GrpcProxyError) as caught:
            decode_receipt_handle(forged)
        assert caught.value.code == d.INVALID_RECEIPT_HANDLE


def test_consistent_hash_is_stable_and_in_range() -> None:
    for buckets in (1, 2, 7, 16):
        picked = [consistent_hash(key, buckets) for key in range(-500, 500)]
        assert all(0 <= b < buckets for b in picked)
        assert picked == [consistent_hash(key, buckets) for key in range(-500, 500)]
    # Growing the bucket count moves a key only to the new bucket (Guava's property).
    for key in range(-300, 300):
        before, after = consistent_hash(key, 8), consistent_hash(key, 9)
        assert after in (before, 8)
