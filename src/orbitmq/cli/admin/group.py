"""mqadmin's consumer group commands: consumerProgress, resetOffsetByTime."""

from __future__ import annotations

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS, format_timestamp_ms

COMMANDS = CommandRegistry("Consumer group")


@COMMANDS.command("consumerProgress")
@click.option("-g", "--groupName", "group", required=True, help="Consumer group.")
@click.option("-t", "--topicName", "topic", help="Only this topic (and the group's retry topic).")
@session_options
def consumer_progress(session: Session, group: str, topic: str | None) -> None:
    """A group's committed offset, the broker's max offset and the lag of every queue."""
    progress = session.admin(lambda admin: admin.consumer_progress(group, topic))
    rows = [
        (
            q.queue.topic,
            q.queue.broker_name,
            q.queue.queue_id,
            q.broker_offset,
            q.consumer_offset,
            q.lag,
            format_timestamp_ms(q.last_timestamp_ms),
        )
        for q in progress.queues
    ]
    columns = ("topic", "brokerName", "queueId", "brokerOffset", "consumerOffset", "diff",
               "lastTime")  # fmt: skip
    if session.out.as_json:
        session.out.data(
            {
                "group": group,
                "consumeTps": progress.consume_tps,
                "diffTotal": progress.total_lag,
                "queues": [dict(zip(columns, row, strict=True)) for row in rows],
            }
        )
        return
    session.out.table(
        columns,
        rows,
        title=f"{group}: consume TPS {progress.consume_tps:.2f}, diff total {progress.total_lag}",
    )


@COMMANDS.command("resetOffsetByTime")
@click.option("-g", "--group", required=True, help="Consumer group.")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-s", "--timestamp", required=True, help=f"Where to: {FORMS}.")
@session_options
def reset_offset_by_time(session: Session, group: str, topic: str, timestamp: str) -> None:
    """Move a group's offsets in a topic to the first message stored at or after a time
    (forced: backwards or forwards); online consumers are told and reset themselves."""
    timestamp_ms = session.timestamp_ms(timestamp, "-s/--timestamp")
    offsets = session.admin(
        lambda admin: admin.reset_offset_by_timestamp(group, topic, timestamp_ms)
    )
    session.out.table(
        ("topic", "brokerName", "queueId", "offset"),
        [(mq.topic, mq.broker_name, mq.queue_id, o) for mq, o in sorted(offsets.items())],
    )
