"""mqadmin's queryMsgTraceById (``-i`` message id, ``-t`` trace topic, ``-b``/``-e`` time
range, ``--maxNum``): who sent the message (group, client host, time, cost, status, store
host) and which groups consumed it (time, cost, status, retries), from the trace records the
clients wrote. Listed in the Message section."""

from __future__ import annotations

import dataclasses
from typing import Final

import click

from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS, format_timestamp_ms
from orbitmq.client import AdminClient, NoRouteError
from orbitmq.client.trace import DEFAULT_TRACE_TOPIC, MessageTrace

#: mqadmin's default of -num.
DEFAULT_TRACE_MAX_NUM: Final = 64

_PUB_COLUMNS = ("#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes", "#Status",
                "#StoreHost", "#Topic", "#MsgType")  # fmt: skip
_SUB_COLUMNS = ("#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes",
                "#Status", "#Retries")  # fmt: skip
_END_COLUMNS = ("#Type", "#ProducerGroup", "#ClientHost", "#Time", "#State", "#From")


def _status(success: bool) -> str:
    return "success" if success else "failed"


def print_trace(session: Session, trace: MessageTrace, trace_topic: str) -> None:
    """The trace as mqadmin lays it out: the sends, then the consumes, then the
    transaction ends."""
    out = session.out
    if not (trace.pub or trace.sub or trace.end_transaction):
        out.table(_PUB_COLUMNS, [], title=f"no trace of message {trace.msg_id} in {trace_topic}")
        return
    rows: list[tuple[str, ...]]
    if trace.pub:
        rows = [
            ("Pub", r.group, r.client_host, format_timestamp_ms(r.send_time_ms),
             f"{r.cost_time_ms}ms", _status(r.success), r.store_host, r.topic, r.msg_type)
            for r in trace.pub
        ]  # fmt: skip
        out.table(_PUB_COLUMNS, rows, title="Sent")
    if trace.sub:
        rows = [
            ("Sub", r.group, r.client_host, format_timestamp_ms(r.consume_time_ms),
             f"{r.cost_time_ms}ms", _status(r.success),
             str(r.retry_times) if r.retry_times >= 0 else "?")
            for r in trace.sub
        ]  # fmt: skip
        out.table(_SUB_COLUMNS, rows, title="Consumed")
    if trace.end_transaction:
        rows = [
            ("EndTransaction", r.group, r.client_host, format_timestamp_ms(r.time_ms),
             r.transaction_state, "check" if r.from_transaction_check else "local transaction")
            for r in trace.end_transaction
        ]  # fmt: skip
        out.table(_END_COLUMNS, rows, title="Transaction")


@click.command("queryMsgTraceById")
@click.option("-i", "--msgId", "msg_id", required=True, help="The message id (its unique id).")
@click.option(
    "-t", "--traceTopic", "trace_topic", default=DEFAULT_TRACE_TOPIC, show_default=True,
    help="The trace topic the clients wrote to.",
)  # fmt: skip
@click.option("-b", "--beginTimestamp", "begin", help=f"Traces stored from ({FORMS}).")
@click.option("-e", "--endTimestamp", "end", help=f"Traces stored until ({FORMS}).")
@click.option("--maxNum", "max_num", type=click.IntRange(min=1), default=DEFAULT_TRACE_MAX_NUM,
              show_default=True, help="Trace messages read at most.")  # fmt: skip
@session_options
def query_msg_trace_by_id(
    session: Session, msg_id: str, trace_topic: str, begin: str | None, end: str | None,
    max_num: int,
) -> None:  # fmt: skip
    """Show a message's trace: its sends and the consumes of each group."""
    begin_ms = 0 if begin is None else session.timestamp_ms(begin, "-b/--beginTimestamp")
    end_ms = None if end is None else session.timestamp_ms(end, "-e/--endTimestamp")

    async def query(admin: AdminClient) -> MessageTrace:
        try:
            return await admin.query_msg_trace_by_id(
                msg_id.strip(), trace_topic.strip(), max_num=max_num, begin_ms=begin_ms,
                end_ms=end_ms,
            )  # fmt: skip
        except NoRouteError:
            raise NoRouteError(
                f"trace topic {trace_topic} does not exist: no client wrote a trace to it yet,"
                " and no broker creates it (broker.conf traceTopicEnable=true)"
            ) from None

    trace = session.admin(query)
    if session.out.as_json:
        session.out.data(dataclasses.asdict(trace))
    else:
        print_trace(session, trace, trace_topic)
