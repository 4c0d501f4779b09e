"""``orbitmq admin dlq list|resend``: a consumer group's dead letters (``%DLQ%<group>``),
listed, and sent again to their original topics (idempotent per dead letter)."""

from __future__ import annotations

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import format_timestamp_ms
from orbitmq.client import AdminClient, ResendResult
from orbitmq.client.dead_letters import DEFAULT_DEAD_LETTER_LIMIT

COMMANDS = CommandRegistry("Dead letters")


@click.group("dlq")
def dlq() -> None:
    """A consumer group's dead letters: list, resend."""


COMMANDS.add(dlq)


@dlq.command("list")
@click.option("-g", "--group", required=True, help="Consumer group.")
@click.option(
    "-m",
    "--maxNum",
    "limit",
    type=click.IntRange(1),
    default=DEFAULT_DEAD_LETTER_LIMIT,
    show_default=True,
)
@session_options
def dlq_list(session: Session, group: str, limit: int) -> None:
    """The group's dead letters, oldest first."""
    letters = session.admin(lambda admin: admin.dead_letters(group, limit=limit))
    session.out.table(
        ("msgId", "originalTopic", "uniqueKey", "tags", "keys", "reconsumeTimes", "deadSince",
         "bodySize"),
        [
            (d.msg_id, d.original_topic, d.unique_key, d.tags, d.keys, d.reconsume_times,
             format_timestamp_ms(d.store_timestamp_ms), d.body_size)
            for d in letters
        ],
    )  # fmt: skip


@dlq.command("resend")
@click.option("-g", "--group", required=True, help="Consumer group.")
@click.option(
    "-i", "--msgId", "msg_ids", multiple=True, help="A dead letter's msgId (repeat); default: all."
)
@session_options
def dlq_resend(session: Session, group: str, msg_ids: tuple[str, ...]) -> None:
    """Send dead letters to their original topics again; one already resent is skipped."""

    async def resend(admin: AdminClient) -> list[ResendResult]:
        total = len(msg_ids) or len(await admin.dead_letters(group, limit=2**31 - 1))
        with session.out.progress(f"resending {group}'s dead letters", total) as advance:
            return await admin.resend_dead_letters(
                group, msg_ids or None, on_result=lambda _result: advance()
            )

    results = session.admin(resend)
    session.out.table(
        ("msgId", "status", "resentUniqueKey", "newMsgId"),
        [
            (
                r.msg_id,
                r.status.value,
                r.resent_unique_key,
                r.send_result.msg_id if r.send_result else None,
            )
            for r in results
        ],
    )
