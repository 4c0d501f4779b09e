"""``orbitmq consume -t TOPIC -g GROUP``: read a topic on behalf of a group and print each
message as it arrives (tail -f style), committing the group's offset of each queue after what
was printed; ``--count N`` stops after N messages, Ctrl-C at any time.

It reads every queue of the topic itself, as mqadmin's consumeMessage does: it does not join
the group's rebalance, so stop the group's consumers first, or use a group of its own. Without
``--from`` each queue starts at the group's committed offset, or at its end when the group has
none (CONSUME_FROM_LAST_OFFSET; the broker answers 0 for a queue that still starts at 0, as
RocketMQ's does); ``--from first|last|TIME`` says where."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Final

import click

from orbitmq.cli.message_view import message_row
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS
from orbitmq.client import OffsetNotFoundError, QueueReader
from orbitmq.common import SUB_ALL, MessageQueue

#: How long to wait before looking again when no queue had anything new.
_POLL_S: Final = 0.5


async def start_offset(
    reader: QueueReader, group: str, mq: MessageQueue, start: str | None, timestamp_ms: int | None
) -> int:
    """Where reading ``mq`` starts: at a time, at ``first`` / ``last``, or (None) at the
    group's committed offset, the queue's end when it has none (CONSUME_FROM_LAST_OFFSET)."""
    if timestamp_ms is not None:
        return await reader.search_offset(mq, timestamp_ms)
    if start == "first":
        return await reader.instance.min_offset(mq)
    if start is None:
        addr = await reader.broker_addr(mq)
        timeout_s = reader.instance.config.mq_client_api_timeout_s
        try:
            return await reader.instance.api.query_consumer_offset(addr, group, mq, timeout_s)
        except OffsetNotFoundError:
            pass
    return await reader.instance.max_offset(mq)


@dataclass
class Tail:
    """One consume run: owns where each queue is read next and how many messages were
    printed. One task."""

    session: Session
    reader: QueueReader
    group: str
    expression: str
    count: int | None
    body: bool
    offsets: dict[MessageQueue, int]
    printed: int = 0

    @property
    def done(self) -> bool:
        return self.count is not None and self.printed >= self.count

    async def read_queue(self, mq: MessageQueue) -> bool:
        """Print what ``mq`` holds past its offset (up to the count), then commit the offset
        after the last message read. True when there was anything to read."""
        begin = self.offsets[mq]
        end = await self.reader.instance.max_offset(mq)
        if begin >= end:
            return False
        # The whole range counts as read (messages the filter skips too) unless the count
        # stops it: then the group goes on after the last message printed.
        self.offsets[mq] = end
        async for batch in self.reader.read(mq, begin, end, subscription=self.expression):
            for message in batch:
                row = {"topic": message.topic, "brokerName": mq.broker_name}
                self.session.out.stream_row(row | message_row(message, body=self.body))
                self.printed += 1
                if self.done:
                    self.offsets[mq] = message.queue_offset + 1
                    break
            if self.done:
                break
        await self.reader.commit_offset(self.group, mq, self.offsets[mq])
        return True

    async def run(self) -> None:
        """Read the queues in turn until the count is reached (for ever without one),
        waiting a little when none had anything new."""
        while not self.done:
            read = False
            for mq in sorted(self.offsets):
                read = await self.read_queue(mq) or read
                if self.done:
                    return
            if not read:
                await asyncio.sleep(_POLL_S)


@click.command("consume")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-g", "--group", required=True, help="Consumer group (offsets are committed).")
@click.option(
    "-s", "--subExpression", "expression", default=SUB_ALL, help="Tags, e.g. 'TagA || TagB'."
)
@click.option(
    "--from",
    "start",
    help=f"Start at first, last or a time ({FORMS}); default: the group's offset.",
)
@click.option("--count", type=click.IntRange(1), help="Stop after this many messages.")
@click.option("--body/--no-body", default=True, show_default=True, help="Print bodies.")
@session_options
def consume(
    session: Session, topic: str, group: str, expression: str, start: str | None,
    count: int | None, body: bool,
) -> None:  # fmt: skip
    """Read a topic for a group, print messages as they arrive, commit what was printed."""
    timestamp_ms = None
    if start not in (None, "first", "last"):
        timestamp_ms = session.timestamp_ms(start, "--from")

    async def run() -> None:
        async with QueueReader(client_config=session.client_config()) as reader:
            offsets = {
                mq: await start_offset(reader, group, mq, start, timestamp_ms)
                for mq in await reader.message_queues(topic)
            }
            # Every queue gets an offset at once, as a consumer's first persist does: the
            # group then shows its lag on each, and resetOffsetByTime finds it on each.
            for mq, offset in offsets.items():
                await reader.commit_offset(group, mq, offset)
            await Tail(session, reader, group, expression, count, body, offsets).run()

    # Ctrl-C cancels the run; every queue's offset was committed after what it printed.
    with contextlib.suppress(KeyboardInterrupt):
        session.run(run())
