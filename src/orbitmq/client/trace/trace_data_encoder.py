"""RocketMQ's message trace records (``org.apache.rocketmq.client.trace``): the trace types,
what one record holds (``TraceContext`` with its ``TraceBean``\\ s) and the text layout the
trace hooks of RocketMQ's clients write to RMQ_SYS_TRACE_TOPIC (``TraceDataEncoder``).

A trace message body is records one after another, each ended by FIELD_SPLITOR (char 2),
its fields separated by CONTENT_SPLITOR (char 1)::

    Pub            timestamp region group topic msgId tags keys storeHost bodyLength cost
                   msgType offsetMsgId success
    SubBefore      timestamp region group requestId msgId retryTimes keys
    SubAfter       requestId msgId cost success keys contextCode timestamp group
    EndTransaction timestamp region group topic msgId tags keys storeHost msgType
                   transactionId transactionState fromTransactionCheck

(each line starts with the type's name). Booleans are Java's ``true``/``false``, msgType is
the ordinal of RocketMQ's MessageType, an absent tag, key or transaction id is written
``null`` as Java's StringBuilder writes a null String (RocketMQ's decoder indexes a
record's last field, so it must never be empty). The decoder also reads the shorter records
older clients wrote: Pub of 13 fields (no offsetMsgId) and of 15 (a client host at the
end), SubAfter of 6 (no contextCode), 7 (no timestamp, no group) and 8 (no group).

The functions are pure: safe from any thread or task.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from orbitmq.common import message_const as mc
from orbitmq.common.topic import RMQ_SYS_TRACE_TOPIC

log = logging.getLogger(__name__)

#: Between the fields of one record (RocketMQ's TraceConstants.CONTENT_SPLITOR).
CONTENT_SPLITOR: Final = "\x01"
#: After each record (TraceConstants.FIELD_SPLITOR).
FIELD_SPLITOR: Final = "\x02"
#: The trace producers' group prefix (TraceConstants.GROUP_NAME_PREFIX).
GROUP_NAME_PREFIX: Final = "_INNER_TRACE_PRODUCER"
#: Where traces go unless a client names another topic (TopicValidator.RMQ_SYS_TRACE_TOPIC).
DEFAULT_TRACE_TOPIC: Final = RMQ_SYS_TRACE_TOPIC
#: How Java writes a null String into a record.
_NULL: Final = "null"


class TraceType(enum.Enum):
    """What a record says happened (RocketMQ's TraceType); the value is the record's first
    field."""

    PUB = "Pub"
    SUB_BEFORE = "SubBefore"
    SUB_AFTER = "SubAfter"
    END_TRANSACTION = "EndTransaction"


class TraceMessageType(enum.IntEnum):
    """The kind of message a Pub or EndTransaction record is about (RocketMQ's MessageType,
    written as its ordinal)."""

    NORMAL_MSG = 0
    TRANS_MSG_HALF = 1
    TRANS_MSG_COMMIT = 2
    DELAY_MSG = 3
    #: RocketMQ 5's; 4.9.x clients never write it.
    ORDER_MSG = 4


@dataclass(slots=True)
class TraceBean:
    """One message of a record (RocketMQ's TraceBean). Mutable: the hook that builds it
    fills in the ids when the send is answered; one task at a time."""

    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str | None = None
    keys: str | None = None
    store_host: str = ""
    client_host: str = ""
    store_time_ms: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: TraceMessageType = TraceMessageType.NORMAL_MSG
    #: EndTransaction: the LocalTransactionState's name (COMMIT_MESSAGE, ROLLBACK_MESSAGE,
    #: UNKNOW).
    transaction_state: str = ""
    transaction_id: str | None = None
    from_transaction_check: bool = False


@dataclass(slots=True)
class TraceContext:
    """One trace record (RocketMQ's TraceContext): what happened, when, in which group, how
    long it took; Pub and EndTransaction records hold one bean, SubBefore and SubAfter one
    per message of the listener call (each written as a record of its own). Mutable until
    appended to a dispatcher, which owns it from then on; one task at a time."""

    trace_type: TraceType
    timestamp_ms: int = 0
    region_id: str = ""
    group_name: str = ""
    cost_time_ms: int = 0
    success: bool = True
    #: Pairs a SubAfter with its SubBefore.
    request_id: str = ""
    context_code: int = 0
    trace_beans: list[TraceBean] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TraceTransferBean:
    """A record as the text a trace message carries and the keys it is indexed under
    (RocketMQ's TraceTransferBean): each bean's msgId and each of its keys."""

    trans_data: str
    trans_keys: frozenset[str]


def _text(value: str | None) -> str:
    return _NULL if value is None else value


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _record(*fields: object) -> str:
    return CONTENT_SPLITOR.join(map(str, fields)) + FIELD_SPLITOR


def _encode_data(ctx: TraceContext) -> str:
    beans = ctx.trace_beans
    if ctx.trace_type is TraceType.PUB:
        # One per send: an f-string costs half what joining each field's str() does.
        b, c = beans[0], CONTENT_SPLITOR
        return (
            f"Pub{c}{ctx.timestamp_ms}{c}{ctx.region_id}{c}{ctx.group_name}{c}{b.topic}{c}"
            f"{b.msg_id}{c}{_text(b.tags)}{c}{_text(b.keys)}{c}{b.store_host}{c}"
            f"{b.body_length}{c}{ctx.cost_time_ms}{c}{int(b.msg_type)}{c}{b.offset_msg_id}{c}"
            f"{_bool(ctx.success)}{FIELD_SPLITOR}"
        )
    if ctx.trace_type is TraceType.SUB_BEFORE:
        return "".join(
            _record(
                ctx.trace_type.value,
                ctx.timestamp_ms,
                ctx.region_id,
                ctx.group_name,
                ctx.request_id,
                b.msg_id,
                b.retry_times,
                _text(b.keys),
            )
            for b in beans
        )
    if ctx.trace_type is TraceType.SUB_AFTER:
        return "".join(
            _record(
                ctx.trace_type.value,
                ctx.request_id,
                b.msg_id,
                ctx.cost_time_ms,
                _bool(ctx.success),
                _text(b.keys),
                ctx.context_code,
                ctx.timestamp_ms,
                ctx.group_name,
            )
            for b in beans
        )
    b = beans[0]
    return _record(
        ctx.trace_type.value,
        ctx.timestamp_ms,
        ctx.region_id,
        ctx.group_name,
        b.topic,
        b.msg_id,
        _text(b.tags),
        _text(b.keys),
        b.store_host,
        int(b.msg_type),
        _text(b.transaction_id),
        b.transaction_state,
        _bool(b.from_transaction_check),
    )


def encode_trace_context(ctx: TraceContext) -> TraceTransferBean:
    """``ctx`` as trace message text and the keys to index it under (RocketMQ's
    encoderFromContextBean)."""
    keys = {bean.msg_id for bean in ctx.trace_beans}
    for bean in ctx.trace_beans:
        if bean.keys:
            keys.update(bean.keys.split(mc.KEY_SEPARATOR))
    keys.discard("")  # keys separated by more than one space
    return TraceTransferBean(_encode_data(ctx), frozenset(keys))


def _optional(value: str) -> str | None:
    return None if value == _NULL else value


def _java_bool(value: str) -> bool:
    # Java's Boolean.parseBoolean: "true" in any case is true, anything else false.
    return value.lower() == "true"


def _decode_pub(line: list[str]) -> TraceContext:
    bean = TraceBean(
        topic=line[4],
        msg_id=line[5],
        tags=_optional(line[6]),
        keys=_optional(line[7]),
        store_host=line[8],
        body_length=int(line[9]),
        msg_type=TraceMessageType(int(line[11])),
    )
    ctx = TraceContext(
        TraceType.PUB,
        timestamp_ms=int(line[1]),
        region_id=line[2],
        group_name=line[3],
        cost_time_ms=int(line[10]),
        trace_beans=[bean],
    )
    if len(line) == 13:
        ctx.success = _java_bool(line[12])
    elif len(line) >= 14:
        bean.offset_msg_id = line[12]
        ctx.success = _java_bool(line[13])
        if len(line) >= 15:
            bean.client_host = line[14]
    return ctx


def _decode_sub_before(line: list[str]) -> TraceContext:
    bean = TraceBean(msg_id=line[5], retry_times=int(line[6]), keys=_optional(line[7]))
    return TraceContext(
        TraceType.SUB_BEFORE,
        timestamp_ms=int(line[1]),
        region_id=line[2],
        group_name=line[3],
        request_id=line[4],
        trace_beans=[bean],
    )


def _decode_sub_after(line: list[str]) -> TraceContext:
    ctx = TraceContext(
        TraceType.SUB_AFTER,
        request_id=line[1],
        cost_time_ms=int(line[3]),
        success=_java_bool(line[4]),
        trace_beans=[TraceBean(msg_id=line[2], keys=_optional(line[5]))],
    )
    if len(line) >= 7:
        ctx.context_code = int(line[6])
    if len(line) >= 8:
        ctx.timestamp_ms = int(line[7])
    if len(line) >= 9:
        ctx.group_name = line[8]
    return ctx


def _decode_end_transaction(line: list[str]) -> TraceContext:
    bean = TraceBean(
        topic=line[4],
        msg_id=line[5],
        tags=_optional(line[6]),
        keys=_optional(line[7]),
        store_host=line[8],
        msg_type=TraceMessageType(int(line[9])),
        transaction_id=_optional(line[10]),
        transaction_state=line[11],
        from_transaction_check=_java_bool(line[12]),
    )
    return TraceContext(
        TraceType.END_TRANSACTION,
        timestamp_ms=int(line[1]),
        region_id=line[2],
        group_name=line[3],
        trace_beans=[bean],
    )


_DECODERS: Final = {
    TraceType.PUB.value: _decode_pub,
    TraceType.SUB_BEFORE.value: _decode_sub_before,
    TraceType.SUB_AFTER.value: _decode_sub_after,
    TraceType.END_TRANSACTION.value: _decode_end_transaction,
}


def decode_trace_data(data: str) -> list[TraceContext]:
    """The records of a trace message body, one context (and one bean) each (RocketMQ's
    decoderFromTraceDataString). A record of a type this does not know, or too short or
    with a bad number, is skipped with a debug log: one writer's bad record must not hide
    the others of the same message."""
    return list(_decoded(data))


def _decoded(data: str) -> Iterator[TraceContext]:
    for record in data.split(FIELD_SPLITOR):
        if not record:
            continue
        line = record.split(CONTENT_SPLITOR)
        decoder = _DECODERS.get(line[0])
        if decoder is None:
            log.debug("trace record of unknown type %r skipped", line[0])
            continue
        try:
            yield decoder(line)
        except (IndexError, ValueError) as exc:
            log.debug("malformed %s trace record skipped (%s): %r", line[0], exc, record)
