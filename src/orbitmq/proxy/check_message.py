"""The message a gRPC producer's transaction checker is shown: a stored half message as an
``apache.rocketmq.v2.Message`` (the fields RocketMQ 5's ``GrpcConverter.buildMessage`` fills).

Its body digest is the body's MD5 in upper-case hex, as RocketMQ 5's proxy sends it: the
clients check it (the Node client 1.0.8 does not call its checker without one). Tag, keys,
message id (UNIQ_KEY), message group (``__SHARDINGKEY``) and the user properties carry over;
the broker's own properties (the half's REAL_TOPIC and the like) stay behind. Pure function.
"""

from __future__ import annotations

import hashlib
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.proxy.v2 import definition_pb2 as d

#: Properties that are the broker's or the system's, not the user's.
_SYSTEM_PROPERTIES: Final = frozenset(
    {
        mc.PROPERTY_TAGS,
        mc.PROPERTY_KEYS,
        mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
        mc.PROPERTY_SHARDING_KEY,
        mc.PROPERTY_REAL_TOPIC,
        mc.PROPERTY_REAL_QUEUE_ID,
        mc.PROPERTY_TRANSACTION_PREPARED,
        mc.PROPERTY_PRODUCER_GROUP,
        mc.PROPERTY_TRANSACTION_CHECK_TIMES,
        mc.PROPERTY_WAIT_STORE_MSG_OK,
        mc.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS,
        mc.PROPERTY_TIMER_DELIVER_MS,
        mc.PROPERTY_TIMER_DELAY_SEC,
        mc.PROPERTY_DELAY_TIME_LEVEL,
        mc.PROPERTY_MIN_OFFSET,
        mc.PROPERTY_MAX_OFFSET,
        mc.PROPERTY_MSG_REGION,
        mc.PROPERTY_TRACE_SWITCH,
        mc.PROPERTY_CLUSTER,
        mc.PROPERTY_HALF_BATCH,
        mc.PROPERTY_PUT_BACK_TO,
    }
)


def _timestamp(ms: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMilliseconds(ms)
    return stamp


def _host(address: tuple[str, int]) -> str:
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_message(msg: MessageExt) -> d.Message:
    """``msg`` (a half, in its real topic) as the 5.x clients read a message."""
    props = msg.properties
    system = d.SystemProperties(
        keys=[k for k in props.get(mc.PROPERTY_KEYS, "").split(mc.KEY_SEPARATOR) if k],
        message_id=props.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX) or msg.msg_id,
        body_digest=d.Digest(type=d.MD5, checksum=hashlib.md5(msg.body).hexdigest().upper()),
        body_encoding=d.GZIP if msg.sys_flag & sf.COMPRESSED_FLAG else d.IDENTITY,
        message_type=d.TRANSACTION,
        born_timestamp=_timestamp(msg.born_timestamp),
        born_host=_host(msg.born_host),
        store_timestamp=_timestamp(msg.store_timestamp),
        store_host=_host(msg.store_host),
        queue_id=msg.queue_id,
        queue_offset=msg.queue_offset,
        delivery_attempt=msg.reconsume_times + 1,
    )
    if mc.PROPERTY_TAGS in props:
        system.tag = props[mc.PROPERTY_TAGS]
    if mc.PROPERTY_SHARDING_KEY in props:
        system.message_group = props[mc.PROPERTY_SHARDING_KEY]
    user = {k: v for k, v in props.items() if k not in _SYSTEM_PROPERTIES}
    return d.Message(
        topic=d.Resource(name=msg.topic),
        user_properties=user,
        system_properties=system,
        body=msg.body,
    )
