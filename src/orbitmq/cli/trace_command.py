"""``queryMsgTraceById``: mqadmin's command of the same name (``-i`` message id, ``-t``
trace topic, ``-b``/``-e`` time range, ``--maxNum``), with ``-n`` or NAMESRV_ADDR for the
name servers: who sent the message (group, client host, time, cost, status, store host) and
which groups consumed it (time, cost, status, retries), as tables or ``--json``.

The command is a plain click command, for the ``orbitmq admin`` group to add
(``admin.add_command(query_msg_trace_by_id)``)."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Final

import click
from rich.console import Console
from rich.table import Table

from orbitmq.cli.console import fail
from orbitmq.client import AdminClient, ClientConfig, NoRouteError
from orbitmq.client.trace import DEFAULT_TRACE_TOPIC, MessageTrace
from orbitmq.common import OrbitError

#: Where ``orbitmq start`` puts its name server, when neither -n nor NAMESRV_ADDR says.
_DEFAULT_NAMESRV: Final = "127.0.0.1:9876"
#: mqadmin's default of -num.
_MAX_NUM: Final = 64
#: Wide enough that tables piped to a file or a pager are never cut or wrapped.
_PIPED_WIDTH: Final = 1000


def _time(ms: int) -> str:
    """Local time to the millisecond (mqadmin prints yyyy-MM-dd HH:mm:ss)."""
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if ms else ""


def _status(success: bool) -> str:
    return "success" if success else "failed"


def _table(title: str, columns: Sequence[str], rows: list[list[str]]) -> Table:
    table = Table(title=title, title_justify="left", highlight=False)
    for column in columns:
        table.add_column(column, no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


def print_trace(trace: MessageTrace, trace_topic: str) -> None:
    """The trace as mqadmin lays it out: the sends, then the consumes, then verdicts."""
    out = Console(highlight=False, width=None if sys.stdout.isatty() else _PIPED_WIDTH)
    if not (trace.pub or trace.sub or trace.end_transaction):
        out.print(f"no trace of message {trace.msg_id} in topic {trace_topic}", markup=False)
        return
    if trace.pub:
        rows = [
            ["Pub", r.group, r.client_host, _time(r.send_time_ms), f"{r.cost_time_ms}ms",
             _status(r.success), r.store_host, r.topic, r.msg_type]
            for r in trace.pub
        ]  # fmt: skip
        columns = ["#Type", "#ProducerGroup", "#ClientHost", "#SendTime", "#CostTimes",
                   "#Status", "#StoreHost", "#Topic", "#MsgType"]  # fmt: skip
        out.print(_table("Sent", columns, rows))
    if trace.sub:
        rows = [
            ["Sub", r.group, r.client_host, _time(r.consume_time_ms), f"{r.cost_time_ms}ms",
             _status(r.success), str(r.retry_times) if r.retry_times >= 0 else "?"]
            for r in trace.sub
        ]  # fmt: skip
        columns = ["#Type", "#ConsumerGroup", "#ClientHost", "#ConsumerTime", "#CostTimes",
                   "#Status", "#Retries"]  # fmt: skip
        out.print(_table("Consumed", columns, rows))
    if trace.end_transaction:
        rows = [
            ["EndTransaction", r.group, r.client_host, _time(r.time_ms), r.transaction_state,
             "check" if r.from_transaction_check else "local transaction"]
            for r in trace.end_transaction
        ]  # fmt: skip
        columns = ["#Type", "#ProducerGroup", "#ClientHost", "#Time", "#State", "#From"]
        out.print(_table("Transaction", columns, rows))


@click.command("queryMsgTraceById")
@click.option(
    "-n", "--namesrvAddr", "namesrv_addr", envvar="NAMESRV_ADDR", default=_DEFAULT_NAMESRV,
    show_default=True, help="Name servers, host:port;host:port (or NAMESRV_ADDR).",
)  # fmt: skip
@click.option("-i", "--msgId", "msg_id", required=True, help="The message id (its unique id).")
@click.option(
    "-t", "--traceTopic", "trace_topic", default=DEFAULT_TRACE_TOPIC, show_default=True,
    help="The trace topic the clients wrote to.",
)  # fmt: skip
@click.option("-b", "--beginTimestamp", "begin_ms", type=int, default=0, help="Epoch ms.")
@click.option("-e", "--endTimestamp", "end_ms", type=int, default=None, help="Epoch ms.")
@click.option("--maxNum", "max_num", type=click.IntRange(min=1), default=_MAX_NUM,
              show_default=True, help="Trace messages read at most.")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.option("--access-key", envvar="ORBITMQ_ACCESS_KEY", help="Plain ACL access key.")
@click.option("--secret-key", envvar="ORBITMQ_SECRET_KEY", help="Plain ACL secret key.")
def query_msg_trace_by_id(
    namesrv_addr: str,
    msg_id: str,
    trace_topic: str,
    begin_ms: int,
    end_ms: int | None,
    max_num: int,
    as_json: bool,
    access_key: str | None,
    secret_key: str | None,
) -> None:
    """Show a message's trace: its sends and the consumes of each group."""
    # Imported here: the remoting package pulls in the event loop choice (uvloop) that only
    # commands that talk to servers need.
    from orbitmq.remoting import run  # noqa: PLC0415

    async def query() -> MessageTrace:
        config = ClientConfig(
            namesrv_addr=namesrv_addr,
            instance_name="orbitmq-cli",
            access_key=access_key,
            secret_key=secret_key,
        )
        async with AdminClient(client_config=config) as admin:
            return await admin.query_msg_trace_by_id(
                msg_id.strip(), trace_topic.strip(), max_num=max_num, begin_ms=begin_ms,
                end_ms=end_ms,
            )  # fmt: skip

    try:
        trace = run(query())
    except NoRouteError:
        fail(
            f"trace topic {trace_topic} does not exist: no client wrote a trace to it yet, "
            "and no broker creates it (broker.conf traceTopicEnable=true)"
        )
    except (OrbitError, OSError, TimeoutError) as exc:
        fail(" ".join(str(exc).split()) or type(exc).__name__)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(trace)))
    else:
        print_trace(trace, trace_topic)
