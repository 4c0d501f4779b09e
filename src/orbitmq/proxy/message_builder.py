"""Stored messages to gRPC ones: a broker's ``MessageExt`` -> ``apache.rocketmq.v2.Message``
(RocketMQ 5's proxy ``GrpcConverter.buildMessage``), the reverse of ``message_converter``:
TAGS -> tag, KEYS -> keys, UNIQ_KEY -> message id, __SHARDINGKEY -> message group,
TIMER_DELIVER_MS -> delivery timestamp, POP_CK -> receipt handle, reconsume times + 1 ->
delivery attempt; every property that is not a system one is a user property."""

from __future__ import annotations

import hashlib
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.topic_message_type import TopicMessageType, message_type_of
from orbitmq.proxy.message_converter import PROPERTY_TRACE_CONTEXT
from orbitmq.proxy.v2 import definition_pb2 as d

_MESSAGE_TYPE: Final = {
    TopicMessageType.TRANSACTION: d.TRANSACTION,
    TopicMessageType.DELAY: d.DELAY,
    TopicMessageType.FIFO: d.FIFO,
    TopicMessageType.NORMAL: d.NORMAL,
}
_DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"


def timestamp(ms: int) -> Timestamp:
    return Timestamp(seconds=ms // 1000, nanos=(ms % 1000) * 1_000_000)


def _host(address: tuple[str, int]) -> str:
    return f"{address[0]}:{address[1]}"


def build_message(message: MessageExt) -> d.Message:
    """``message`` as a 5.x client receives it (its POP_CK property, when set, is already the
    gRPC receipt handle)."""
    properties = message.properties
    system = d.SystemProperties()
    if (tag := properties.get(mc.PROPERTY_TAGS)) is not None:
        system.tag = tag
    if keys := properties.get(mc.PROPERTY_KEYS):
        system.keys.extend(keys.split(mc.KEY_SEPARATOR))
    system.message_id = properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or message.msg_id
    system.body_digest.CopyFrom(
        d.Digest(type=d.MD5, checksum=hashlib.md5(message.body).hexdigest().upper())
    )
    compressed = message.sys_flag & sf.COMPRESSED_FLAG
    system.body_encoding = d.GZIP if compressed else d.IDENTITY
    system.message_type = _MESSAGE_TYPE[message_type_of(properties)]
    system.born_timestamp.CopyFrom(timestamp(message.born_timestamp))
    system.born_host = _host(message.born_host)
    system.store_timestamp.CopyFrom(timestamp(message.store_timestamp))
    system.store_host = _host(message.store_host)
    if (deliver := properties.get(mc.PROPERTY_TIMER_DELIVER_MS)) and deliver.isdigit():
        system.delivery_timestamp.CopyFrom(timestamp(int(deliver)))
    if (group := properties.get(mc.PROPERTY_SHARDING_KEY)) is not None:
        system.message_group = group
    if (handle := properties.get(mc.PROPERTY_POP_CK)) is not None:
        system.receipt_handle = handle
    system.queue_id = message.queue_id
    system.queue_offset = message.queue_offset
    system.delivery_attempt = message.reconsume_times + 1
    if (trace := properties.get(PROPERTY_TRACE_CONTEXT)) is not None:
        system.trace_context = trace
    origin_topic = properties.get(_DLQ_ORIGIN_TOPIC)
    origin_id = properties.get(mc.PROPERTY_DLQ_ORIGIN_MESSAGE_ID)
    if origin_topic is not None and origin_id is not None:
        system.dead_letter_queue.CopyFrom(
            d.DeadLetterQueue(topic=origin_topic, message_id=origin_id)
        )
    user = {k: v for k, v in properties.items() if k not in mc.STRING_HASH_SET}
    return d.Message(
        topic=d.Resource(name=message.topic),
        user_properties=user,
        system_properties=system,
        body=message.body,
    )
