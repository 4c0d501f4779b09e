"""``orbitmq send -t TOPIC [--tags T] [--keys K] [--props k=v ...] [BODY | -]``: send one
message, or (BODY ``-`` or absent) one message per line of standard input; a row per send."""

from __future__ import annotations

import sys
from collections.abc import Iterable

import click

from orbitmq.cli.admin.send_rt import CLI_PRODUCER_GROUP
from orbitmq.cli.console import fail
from orbitmq.cli.session import Session, session_options
from orbitmq.client import Producer
from orbitmq.common import Message


def user_properties(pairs: Iterable[str]) -> dict[str, str]:
    """``k=v`` pairs as properties; a pair without ``=`` fails the command."""
    props: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"--props: {pair!r} is not key=value")
        props[key] = value
    return props


@click.command("send")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("--tags", help="Message tag.")
@click.option("--keys", help="Message keys, space separated.")
@click.option("--props", multiple=True, metavar="KEY=VALUE", help="A user property (repeat).")
@click.argument("body", required=False)
@session_options
def send(
    session: Session, topic: str, tags: str | None, keys: str | None,
    props: tuple[str, ...], body: str | None,
) -> None:  # fmt: skip
    """Send BODY, or each line of standard input when BODY is - or absent."""
    properties = user_properties(props)

    def message(text: str) -> Message:
        msg = Message(topic, text.encode(), properties=dict(properties))
        msg.tags = tags
        if keys:
            msg.keys = keys.split()
        return msg

    async def send_all(lines: Iterable[str]) -> int:
        sent = 0
        async with Producer(CLI_PRODUCER_GROUP, client_config=session.client_config()) as producer:
            for line in lines:
                result = await producer.send(message(line))
                mq = result.message_queue
                session.out.stream_row(
                    {
                        "msgId": result.msg_id,
                        "offsetMsgId": result.offset_msg_id,
                        "brokerName": mq.broker_name,
                        "queueId": mq.queue_id,
                        "queueOffset": result.queue_offset,
                        "sendStatus": result.send_status.name,
                    }
                )
                sent += 1
        return sent

    lines = (line.rstrip("\n") for line in sys.stdin) if body in (None, "-") else [body]
    session.run(send_all(lines))
