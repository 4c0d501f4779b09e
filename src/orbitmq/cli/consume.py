"""``orbitmq consume -t TOPIC -g GROUP``: consume as a member of a group and print each
message as it arrives (tail -f style), committing what was printed; ``--count N`` stops after
N messages, Ctrl-C at any time. ``--from`` says where a group with no committed offset starts
(RocketMQ's consumeFromWhere): first, last, or a time."""

from __future__ import annotations

import contextlib
from typing import Final

import click

from orbitmq.cli.message_view import message_row
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS
from orbitmq.client import LitePullConsumer, LitePullConsumerConfig
from orbitmq.common import SUB_ALL
from orbitmq.protocol import ConsumeFromWhere

#: How long one poll waits before polling again (Ctrl-C is seen between polls too).
_POLL_S: Final = 1.0


def consumer_config(session: Session, start: str, count: int | None) -> LitePullConsumerConfig:
    """Where a new group starts (``first``, ``last`` or a time); with a ``count``, one
    message per pull, so that the group's offset stops exactly after the last one printed."""
    config = LitePullConsumerConfig()
    if count is not None:
        config.pull_batch_size = 1
    if start == "first":
        config.consume_from_where = ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    elif start == "last":
        config.consume_from_where = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET
    else:
        config.consume_from_where = ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
        config.consume_timestamp_ms = session.timestamp_ms(start, "--from")
    return config


async def consume_rows(
    session: Session, consumer: LitePullConsumer, count: int | None, body: bool
) -> int:
    """Poll and print until ``count`` messages were printed (for ever when None),
    committing each printed batch. Returns how many were printed."""
    printed = 0
    while count is None or printed < count:
        batch = await consumer.poll(_POLL_S)
        for message in batch:
            session.out.stream_row({"topic": message.topic, **message_row(message, body=body)})
        printed += len(batch)
        if batch:
            await consumer.commit_sync()
    return printed


@click.command("consume")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-g", "--group", required=True, help="Consumer group (offsets are committed).")
@click.option(
    "-s", "--subExpression", "expression", default=SUB_ALL, help="Tags, e.g. 'TagA || TagB'."
)
@click.option(
    "--from",
    "start",
    default="last",
    show_default=True,
    help=f"Where a group with no committed offset starts: first, last or a time ({FORMS}).",
)
@click.option("--count", type=click.IntRange(1), help="Stop after this many messages.")
@click.option("--body/--no-body", default=True, show_default=True, help="Print bodies.")
@session_options
def consume(
    session: Session, topic: str, group: str, expression: str, start: str,
    count: int | None, body: bool,
) -> None:  # fmt: skip
    """Consume a topic as a group member and print messages as they arrive."""
    config = consumer_config(session, start, count)

    async def run() -> int:
        consumer = LitePullConsumer(group, client_config=session.client_config(), config=config)
        consumer.subscribe(topic, expression)
        async with consumer:
            return await consume_rows(session, consumer, count, body)

    # Ctrl-C cancels the run: the consumer shuts down, and every printed batch was committed.
    with contextlib.suppress(KeyboardInterrupt):
        session.run(run())
