"""Timer intake: a message carrying RocketMQ 5's timer properties is parked in the timer
topic (RocketMQ's ``HookUtils.handleScheduleMessage`` / ``transformTimerMessage``).

The commit log calls ``transform_timer_message`` on every put, before delay levels: plain
functions over the message, safe from any thread.
"""

from __future__ import annotations

from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.common.topic import (
    RMQ_SYS_TRANS_HALF_TOPIC,
    RMQ_SYS_TRANS_OP_HALF_TOPIC,
    RMQ_SYS_WHEEL_TIMER_TOPIC,
)
from orbitmq.store.message_store_config import MessageStoreConfig
from orbitmq.store.put_message_result import PutMessageResult, PutMessageStatus

#: The three ways to ask for a time, in the order RocketMQ reads them (the first set wins).
TIMER_REQUEST_PROPERTIES = (
    mc.PROPERTY_TIMER_DELAY_SEC,
    mc.PROPERTY_TIMER_DELAY_MS,
    mc.PROPERTY_TIMER_DELIVER_MS,
)
#: The same as a set: the commit log's one test per put (most messages carry none of them).
TIMER_REQUEST_KEYS = frozenset(TIMER_REQUEST_PROPERTIES)


def is_timer_message(msg: MessageExtBrokerInner) -> bool:
    """RocketMQ's ``checkIfTimerMessage``: asks for a time and is not already a timer's
    copy (in the timer topic, or delivered: TIMER_OUT_MS set). A delay level wins: the
    TIMER_* properties are then cleared and the message is not a timer."""
    properties = msg.properties
    if msg.delay_time_level > 0:
        cleared = False
        for key in TIMER_REQUEST_PROPERTIES:
            cleared |= properties.pop(key, None) is not None
        if cleared:
            msg.properties_string = ""
        return False
    if msg.topic == RMQ_SYS_WHEEL_TIMER_TOPIC or mc.PROPERTY_TIMER_OUT_MS in properties:
        return False
    return any(key in properties for key in TIMER_REQUEST_PROPERTIES)


def build_delete_key(real_topic: str, unique_key: str) -> str:
    """What a recall marker's TIMER_DEL_UNIQKEY names: a timer by its real topic and unique
    id (RocketMQ's ``TimerMessageStore.buildDeleteKey``)."""
    return f"{real_topic}+{unique_key}"


def _failure(status: PutMessageStatus, remark: str) -> PutMessageResult:
    return PutMessageResult(status, None, remark)


def deliver_time_ms(msg: MessageExtBrokerInner, now_ms: int) -> tuple[str, str, int] | None:
    """(property, its value, the absolute due time) of a timer message; relative delays
    count from ``now_ms`` (arrival at the broker). None when the value is not an integer."""
    properties = msg.properties
    for key in TIMER_REQUEST_PROPERTIES:
        raw = properties.get(key)
        if raw is None:
            continue
        try:
            value = int(raw.strip())
        except ValueError:
            return None
        if key == mc.PROPERTY_TIMER_DELAY_SEC:
            return key, raw, now_ms + value * 1000
        if key == mc.PROPERTY_TIMER_DELAY_MS:
            return key, raw, now_ms + value
        return key, raw, value
    return None


def transform_timer_message(
    msg: MessageExtBrokerInner, config: MessageStoreConfig, now_ms: int
) -> PutMessageResult | None:
    """Move a timer message due in the future into the timer topic, queue 0, with its real
    topic and queue in REAL_TOPIC / REAL_QID and its due time in TIMER_OUT_MS. A time now or
    in the past leaves the message as it is (delivered at once). Returns the refusal, or None
    when the message may be stored. Halves and rollbacks are left alone: a transactional
    timer message starts its wait when it is committed. (RocketMQ 5 stores a half with its
    transaction type cleared, so its hook parks the half itself in the timer topic, with the
    half topic as REAL_TOPIC, and the transaction is lost; its gRPC proxy refuses such
    messages. Here halves and their op records are never parked.)"""
    if sf.transaction_value(msg.sys_flag) not in (
        sf.TRANSACTION_NOT_TYPE,
        sf.TRANSACTION_COMMIT_TYPE,
    ) or msg.topic in (RMQ_SYS_TRANS_HALF_TOPIC, RMQ_SYS_TRANS_OP_HALF_TOPIC):
        return None
    if not is_timer_message(msg):
        return None
    if not config.timer_wheel_enable:
        return _failure(
            PutMessageStatus.WHEEL_TIMER_NOT_ENABLE,
            "accurate timer message is not enabled, timerWheelEnable is false",
        )
    found = deliver_time_ms(msg, now_ms)
    if found is None:
        key = next(k for k in TIMER_REQUEST_PROPERTIES if k in msg.properties)
        return _failure(
            PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL,
            f"timer message illegal: {key}={msg.properties[key]!r} is not an integer",
        )
    key, raw, due_ms = found
    if due_ms <= now_ms:
        if mc.PROPERTY_TIMER_DEL_UNIQKEY in msg.properties:
            # A recall marker whose timer is due already: delivering the marker would hand
            # it to consumers, and its message is on its way (RocketMQ's HookUtils).
            return _failure(
                PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL,
                f"timer message illegal: {mc.PROPERTY_TIMER_DEL_UNIQKEY} for a time passed",
            )
        return None
    limit_ms = config.timer_max_delay_sec * 1000
    if due_ms - now_ms > limit_ms:
        return _failure(
            PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL,
            f"timer message illegal: {key}={raw} is {due_ms - now_ms} ms ahead, more than "
            f"timerMaxDelaySec {config.timer_max_delay_sec} ({limit_ms} ms)",
        )
    properties = msg.properties
    properties[mc.PROPERTY_TIMER_OUT_MS] = str(due_ms)
    properties[mc.PROPERTY_REAL_TOPIC] = msg.topic
    properties[mc.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
    msg.properties_string = ""
    msg.topic = RMQ_SYS_WHEEL_TIMER_TOPIC
    msg.queue_id = 0
    return None
