"""gRPC messages to the broker's: ``apache.rocketmq.v2.Message`` -> the properties, body
and sys flag of a remoting send (RocketMQ 5's proxy ``SendMessageActivity.buildMessage``).

The mapping keeps the 4.x and 5.x views of one message the same: tag <-> TAGS, keys <->
KEYS (space-joined), message id <-> UNIQ_KEY, message group <-> __SHARDINGKEY, delivery
timestamp <-> TIMER_DELIVER_MS, a transactional message <-> TRAN_MSG; user properties pass
through unchanged (a user property may not take a system property's name)."""

from __future__ import annotations

from typing import Final

from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.proxy.grpc_status import GrpcProxyError
from orbitmq.proxy.v2 import definition_pb2 as d

#: RocketMQ 5's ``MessageConst.PROPERTY_TRACE_CONTEXT``.
PROPERTY_TRACE_CONTEXT: Final = "TRACE_CONTEXT"
#: A delivery timestamp whose seconds exceed this is taken as milliseconds: the official
#: Python client 5.1.2 copies the user's value into ``seconds`` while its docstring asks for
#: milliseconds (as seconds it would be past the year 5000).
_SECONDS_LIMIT: Final = 100_000_000_000


def timestamp_ms(seconds: int, nanos: int) -> int:
    """A protobuf Timestamp in milliseconds (``Timestamps.toMillis``), with the Python
    client's milliseconds-in-seconds slip read as milliseconds."""
    if seconds > _SECONDS_LIMIT:
        return seconds
    return seconds * 1000 + nanos // 1_000_000


def message_properties(message: d.Message, producer_group: str) -> dict[str, str]:
    """The remoting properties of ``message`` (``buildMessageProperty``). GrpcProxyError
    ILLEGAL_MESSAGE_PROPERTY_KEY for a user property named as a system one,
    ILLEGAL_MESSAGE_ID without a message id."""
    properties = dict(message.user_properties)
    for key in properties:
        if key in mc.STRING_HASH_SET:
            raise GrpcProxyError(
                d.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property is used by system: {key}"
            )
    system = message.system_properties
    if system.tag:
        properties[mc.PROPERTY_TAGS] = system.tag
    if system.keys:
        properties[mc.PROPERTY_KEYS] = mc.KEY_SEPARATOR.join(system.keys)
    if not system.message_id:
        raise GrpcProxyError(d.ILLEGAL_MESSAGE_ID, "message id is empty")
    properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = system.message_id
    if system.message_type == d.TRANSACTION:
        properties[mc.PROPERTY_TRANSACTION_PREPARED] = "true"
        recovery = system.orphaned_transaction_recovery_duration
        properties[mc.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS] = str(recovery.seconds)
    if system.HasField("delivery_timestamp"):
        deliver = system.delivery_timestamp
        properties[mc.PROPERTY_TIMER_DELIVER_MS] = str(timestamp_ms(deliver.seconds, deliver.nanos))
    properties[mc.PROPERTY_RECONSUME_TIME] = str(system.delivery_attempt)
    properties[mc.PROPERTY_PRODUCER_GROUP] = producer_group
    if system.message_group:
        properties[mc.PROPERTY_SHARDING_KEY] = system.message_group
    if system.trace_context:
        properties[PROPERTY_TRACE_CONTEXT] = system.trace_context
    return properties


def message_sys_flag(message: d.Message) -> int:
    """``buildSysFlag``: a gzip body is marked compressed, a transactional message
    prepared."""
    flag = 0
    if message.system_properties.body_encoding == d.GZIP:
        flag |= sf.COMPRESSED_FLAG
    if message.system_properties.message_type == d.TRANSACTION:
        flag |= sf.TRANSACTION_PREPARED_TYPE
    return flag
