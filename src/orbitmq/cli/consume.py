"""``orbitmq consume -t TOPIC -g GROUP``: consume as a member of a group and print each
message as it arrives (tail -f style), committing what was printed; ``--count N`` stops after
N messages, Ctrl-C at any time. Without ``--from`` the group goes on from its committed
offsets (a new group from each queue's start while that still holds offset 0, as RocketMQ's
brokers answer); ``--from first|last|TIME`` first moves the group's offsets there."""

from __future__ import annotations

import contextlib
from typing import Final

import click

from orbitmq.cli.message_view import message_row
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS
from orbitmq.client import LitePullConsumer, LitePullConsumerConfig, QueueReader
from orbitmq.common import SUB_ALL

#: How long one poll waits before polling again (Ctrl-C is seen between polls too).
_POLL_S: Final = 1.0


async def move_group_to(
    session: Session, topic: str, group: str, start: str, timestamp_ms: int | None
) -> None:
    """Commit ``group``'s offset of every queue of ``topic`` at the first message stored at
    or after ``timestamp_ms``, or (None) at ``start``: ``first`` (the queue's min offset) or
    ``last`` (its max offset); as resetOffsetByTime does for a group with no consumer
    online."""
    async with QueueReader(client_config=session.client_config()) as reader:
        for mq, (low, high) in sorted((await reader.queue_offsets(topic)).items()):
            if timestamp_ms is not None:
                offset = await reader.search_offset(mq, timestamp_ms)
            else:
                offset = low if start == "first" else high
            await reader.commit_offset(group, mq, offset)


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
    session: Session, topic: str, group: str, expression: str, start: str | None,
    count: int | None, body: bool,
) -> None:  # fmt: skip
    """Consume a topic as a group member and print messages as they arrive."""
    # With a count, one message per pull, so that the group's committed offset stops
    # exactly after the last message printed.
    config = LitePullConsumerConfig()
    if count is not None:
        config.pull_batch_size = 1
    timestamp_ms = None
    if start not in (None, "first", "last"):
        timestamp_ms = session.timestamp_ms(start, "--from")

    async def run() -> int:
        if start is not None:
            await move_group_to(session, topic, group, start, timestamp_ms)
        consumer = LitePullConsumer(group, client_config=session.client_config(), config=config)
        consumer.subscribe(topic, expression)
        async with consumer:
            return await consume_rows(session, consumer, count, body)

    # Ctrl-C cancels the run: the consumer shuts down, and every printed batch was committed.
    with contextlib.suppress(KeyboardInterrupt):
        session.run(run())
