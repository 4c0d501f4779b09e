"""``orbitmq query``: find messages by id (``--id``), key (``--key``), queue offset
(``-b BROKER -q QUEUE --offset N``) or store time range (``--begin [--end]``)."""

from __future__ import annotations

from typing import Final

import click

from orbitmq.cli.admin.message import message_at, print_message, print_rows
from orbitmq.cli.console import fail
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS
from orbitmq.client import QueueReader, ScanRange, scan_messages
from orbitmq.common import SUB_ALL, MessageExt, MessageQueue

#: How many messages a key or time query shows unless told otherwise.
DEFAULT_MAX: Final = 64


async def by_time(session: Session, topic: str, scan: ScanRange, max_num: int) -> list[MessageExt]:
    async with QueueReader(client_config=session.client_config()) as reader:
        return [m async for m in scan_messages(reader, topic, scan, max_num)]


@click.command("query")
@click.option("-t", "--topic", help="Topic (needed by all but an offset message id).")
@click.option("-i", "--id", "msg_id", help="A message id: offset id, or unique id with -t.")
@click.option("-k", "--key", help="A message key (from the index).")
@click.option("-b", "--broker", help="Broker name, with --queue and --offset.")
@click.option("-q", "--queue", "queue_id", type=int, help="Queue id, with --broker and --offset.")
@click.option("-o", "--offset", type=click.IntRange(0), help="Queue offset.")
@click.option("--begin", help=f"Stored from ({FORMS}).")
@click.option("--end", help=f"Stored until ({FORMS}); default now.")
@click.option("-s", "--subExpression", "expression", default=SUB_ALL, help="Tags, time queries.")
@click.option(
    "-m", "--max", "max_num", type=click.IntRange(1), default=DEFAULT_MAX, show_default=True
)
@click.option("--body/--no-body", default=False, show_default=True, help="Print bodies.")
@session_options
def query(
    session: Session, topic: str | None, msg_id: str | None, key: str | None,
    broker: str | None, queue_id: int | None, offset: int | None, begin: str | None,
    end: str | None, expression: str, max_num: int, body: bool,
) -> None:  # fmt: skip
    """Find messages by id, key, queue offset or store time range (one of them)."""
    modes = [
        m for m, v in (("--id", msg_id), ("--key", key), ("--offset", offset)) if v is not None
    ]
    if not modes and begin is not None:
        modes = ["--begin"]  # a time range alone; with --key it narrows the key's search
    if len(modes) != 1:
        fail(
            f"query: give one of --id, --key, --offset, --begin (got {', '.join(modes) or 'none'})"
        )
    if msg_id is not None:
        found = session.admin(lambda admin: admin.view_message(msg_id, topic))
        print_message(session, found)
        return
    if topic is None:
        fail(f"query: {modes[0]} needs -t/--topic")
    begin_ms = None if begin is None else session.timestamp_ms(begin, "--begin")
    end_ms = None if end is None else session.timestamp_ms(end, "--end")
    if key is not None:
        messages = session.admin(
            lambda admin: admin.query_messages_by_key(topic, key, max_num, begin_ms or 0, end_ms)
        )
    elif offset is not None:
        if broker is None or queue_id is None:
            fail("query: --offset needs -b/--broker and -q/--queue")
        print_message(
            session, session.run(message_at(session, MessageQueue(topic, broker, queue_id), offset))
        )
        return
    else:
        scan = ScanRange(begin_ms=begin_ms, end_ms=end_ms, subscription=expression)
        messages = session.run(by_time(session, topic, scan, max_num))
    print_rows(session, messages, body=body)
