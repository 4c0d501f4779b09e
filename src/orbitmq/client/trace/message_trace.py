"""``MessageTrace``: what the trace records of one message say, as mqadmin's
queryMsgTraceById shows it (RocketMQ's TraceView): who sent it and where it was stored (Pub
rows), which groups consumed it, when, how long it took, with what result and after how many
retries (Sub rows, one per SubAfter record, its retries from the SubBefore of the same
request), and the verdicts of a transactional message (EndTransaction rows)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from orbitmq.client.trace.trace_data_encoder import TraceContext, TraceType, decode_trace_data
from orbitmq.common import MessageExt


@dataclass(frozen=True, slots=True)
class PubTraceRow:
    """One send of the message. Immutable."""

    group: str
    #: The sending client's host (the trace message's born host, as RocketMQ shows it).
    client_host: str
    send_time_ms: int
    cost_time_ms: int
    success: bool
    topic: str
    tags: str | None
    keys: str | None
    store_host: str
    offset_msg_id: str
    msg_type: str
    region_id: str


@dataclass(frozen=True, slots=True)
class SubTraceRow:
    """One listener call (or lite pull poll) that had the message. Immutable."""

    group: str
    client_host: str
    consume_time_ms: int
    cost_time_ms: int
    success: bool
    #: How many times it had been consumed before (its reconsume times); -1 when the
    #: SubBefore record of the call was not found.
    retry_times: int
    #: How the call ended (a ConsumeReturnType ordinal).
    context_code: int
    request_id: str


@dataclass(frozen=True, slots=True)
class EndTransactionTraceRow:
    """One verdict on the message as a half. Immutable."""

    group: str
    client_host: str
    time_ms: int
    transaction_state: str
    transaction_id: str | None
    from_transaction_check: bool
    store_host: str


@dataclass(frozen=True, slots=True)
class MessageTrace:
    """Every trace row of message ``msg_id``, each kind oldest first. Immutable."""

    msg_id: str
    pub: list[PubTraceRow]
    sub: list[SubTraceRow]
    end_transaction: list[EndTransactionTraceRow]


def _host(message: MessageExt) -> str:
    return message.born_host[0]


def message_trace(msg_id: str, trace_messages: Iterable[MessageExt]) -> MessageTrace:
    """The trace of ``msg_id`` from the trace messages that hold its records."""
    records: list[tuple[TraceContext, str]] = []
    for message in trace_messages:
        host = _host(message)
        for ctx in decode_trace_data(message.body.decode("utf-8", "replace")):
            if ctx.trace_beans[0].msg_id == msg_id:
                records.append((ctx, host))
    befores = {ctx.request_id: ctx for ctx, _ in records if ctx.trace_type is TraceType.SUB_BEFORE}
    pub: list[PubTraceRow] = []
    sub: list[SubTraceRow] = []
    ends: list[EndTransactionTraceRow] = []
    for ctx, host in records:
        bean = ctx.trace_beans[0]
        if ctx.trace_type is TraceType.PUB:
            pub.append(
                PubTraceRow(
                    ctx.group_name, bean.client_host or host, ctx.timestamp_ms,
                    ctx.cost_time_ms, ctx.success, bean.topic, bean.tags, bean.keys,
                    bean.store_host, bean.offset_msg_id, bean.msg_type.name, ctx.region_id,
                )
            )  # fmt: skip
        elif ctx.trace_type is TraceType.SUB_AFTER:
            before = befores.get(ctx.request_id)
            sub.append(
                SubTraceRow(
                    # Older clients' SubAfter records carry neither group nor time.
                    ctx.group_name or (before.group_name if before else ""),
                    host,
                    ctx.timestamp_ms or (before.timestamp_ms if before else 0),
                    ctx.cost_time_ms,
                    ctx.success,
                    before.trace_beans[0].retry_times if before else -1,
                    ctx.context_code,
                    ctx.request_id,
                )
            )
        elif ctx.trace_type is TraceType.END_TRANSACTION:
            ends.append(
                EndTransactionTraceRow(
                    ctx.group_name, host, ctx.timestamp_ms, bean.transaction_state,
                    bean.transaction_id, bean.from_transaction_check, bean.store_host,
                )
            )  # fmt: skip
    return MessageTrace(
        msg_id,
        sorted(pub, key=lambda r: r.send_time_ms),
        sorted(sub, key=lambda r: r.consume_time_ms),
        sorted(ends, key=lambda r: r.time_ms),
    )
