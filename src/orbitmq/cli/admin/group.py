"""mqadmin's consumer group commands: consumerProgress, resetOffsetByTime, updateSubGroup,
deleteSubGroup, consumerConnection, consumerStatus, and producerConnection."""

from __future__ import annotations

import enum
from typing import Any

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.console import fail
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import FORMS, format_timestamp_ms
from orbitmq.client import AdminClient
from orbitmq.protocol import (
    Connection,
    ConsumerConnection,
    ConsumerRunningInfo,
    SubscriptionData,
    SubscriptionGroupConfig,
)

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


@COMMANDS.command("updateSubGroup")
@click.option("-b", "--brokerAddr", "broker_addr", help="On this broker (host:port).")
@click.option("-c", "--clusterName", "cluster", help="On every master of this cluster.")
@click.option("-g", "--groupName", "group", required=True, help="Consumer group.")
@click.option("-s", "--consumeEnable", "consume_enable", type=click.BOOL, default=True)
@click.option("-m", "--consumeFromMinEnable", "from_min", type=click.BOOL, default=False)
@click.option("-d", "--consumeBroadcastEnable", "broadcast", type=click.BOOL, default=False)
@click.option("-o", "--consumeMessageOrderly", "orderly", type=click.BOOL, default=False,
              help="A FIFO group: one message of a message group at a time.")  # fmt: skip
@click.option("-q", "--retryQueueNums", "retry_queues", type=click.IntRange(0), default=1)
@click.option("-r", "--retryMaxTimes", "retry_max", type=click.IntRange(-1), default=16)
@click.option("-i", "--brokerId", "broker_id", type=click.IntRange(0), default=0,
              help="Consume from this broker id.")  # fmt: skip
@click.option("-w", "--whichBrokerWhenConsumeSlowly", "slow_broker_id", type=click.IntRange(0),
              default=1, help="Broker id to consume from when slow.")  # fmt: skip
@click.option("-a", "--notifyConsumerIdsChanged", "notify", type=click.BOOL, default=True)
@session_options
def update_sub_group(
    session: Session, broker_addr: str | None, cluster: str | None, group: str,
    consume_enable: bool, from_min: bool, broadcast: bool, orderly: bool, retry_queues: int,
    retry_max: int, broker_id: int, slow_broker_id: int, notify: bool,
) -> None:  # fmt: skip
    """Create or change a consumer group's settings (retries, broadcast, consume enable ...)
    on a broker (-b) or on every master of a cluster (-c)."""
    if (broker_addr is None) == (cluster is None):
        fail("updateSubGroup: give one of -b/--brokerAddr and -c/--clusterName")
    config = SubscriptionGroupConfig(
        group_name=group, consume_enable=consume_enable, consume_from_min_enable=from_min,
        consume_broadcast_enable=broadcast, consume_message_orderly=orderly,
        retry_queue_nums=retry_queues, retry_max_times=retry_max, broker_id=broker_id,
        which_broker_when_consume_slowly=slow_broker_id, notify_consumer_ids_changed_enable=notify,
    )  # fmt: skip
    addrs = session.admin(
        lambda admin: admin.update_subscription_group(
            config, cluster=cluster, broker_addr=broker_addr
        )
    )
    session.out.table(
        ("brokerAddr", *config.to_value()), [(a, *config.to_value().values()) for a in addrs]
    )


@COMMANDS.command("deleteSubGroup")
@click.option("-b", "--brokerAddr", "broker_addr", help="From this broker (host:port) only.")
@click.option(
    "-c", "--clusterName", "cluster", help="From every master of this cluster, and its topics."
)
@click.option("-g", "--groupName", "group", required=True, help="Consumer group.")
@click.option("-r", "--removeOffset", "remove_offset", type=click.BOOL, default=False,
              help="Delete its committed offsets too (true|false).")  # fmt: skip
@session_options
def delete_sub_group(
    session: Session, broker_addr: str | None, cluster: str | None, group: str,
    remove_offset: bool,
) -> None:  # fmt: skip
    """Delete a consumer group's settings (with -c also its retry and dead letter topics)."""
    if (broker_addr is None) == (cluster is None):
        fail("deleteSubGroup: give one of -b/--brokerAddr and -c/--clusterName")
    addrs = session.admin(
        lambda admin: admin.delete_subscription_group(
            group, cluster=cluster, broker_addr=broker_addr, remove_offset=remove_offset
        )
    )
    session.out.table(("group", "brokerAddr", "deleted"), [(group, a, True) for a in addrs])


def _connection_rows(connections: list[Connection]) -> list[tuple[object, ...]]:
    return [(c.client_id, c.client_addr, c.language.name, c.version) for c in connections]


_CONNECTION_COLUMNS = ("clientId", "clientAddr", "language", "version")


def _subscriptions(subscriptions: list[SubscriptionData]) -> list[dict[str, str]]:
    return [
        {"topic": s.topic, "subExpression": s.sub_string}
        for s in sorted(subscriptions, key=lambda s: s.topic)
    ]


def _name(value: enum.Enum | None) -> str | None:
    return None if value is None else value.name


@COMMANDS.command("consumerConnection")
@click.option("-g", "--consumerGroup", "group", required=True, help="Consumer group.")
@click.option("-b", "--brokerAddr", "broker_addr", help="As this broker (host:port) sees it.")
@session_options
def consumer_connection(session: Session, group: str, broker_addr: str | None) -> None:
    """A consumer group's online clients, their subscriptions, consume type and model."""
    found: ConsumerConnection = session.admin(
        lambda admin: admin.consumer_connection(group, broker_addr=broker_addr)
    )
    settings = {
        "consumeType": _name(found.consume_type),
        "messageModel": _name(found.message_model),
        "consumeFromWhere": _name(found.consume_from_where),
    }
    subscriptions = _subscriptions(list(found.subscription_table.values()))
    rows = _connection_rows(found.connection_set)
    if session.out.as_json:
        connections = [dict(zip(_CONNECTION_COLUMNS, r, strict=True)) for r in rows]
        session.out.data({"connections": connections, "subscriptions": subscriptions, **settings})
        return
    session.out.table(_CONNECTION_COLUMNS, rows, title=f"{group}: clients")
    session.out.table(
        ("topic", "subExpression"), [list(s.values()) for s in subscriptions],
        title="Below is subscription:",
    )  # fmt: skip
    session.out.record(settings)


@COMMANDS.command("producerConnection")
@click.option("-g", "--producerGroup", "group", required=True, help="Producer group.")
@click.option("-t", "--topic", required=True, help="A topic it sends to (its brokers are asked).")
@session_options
def producer_connection(session: Session, group: str, topic: str) -> None:
    """A producer group's online clients, as the brokers of a topic know them."""
    found = session.admin(lambda admin: admin.producer_connection(group, topic))
    session.out.table(_CONNECTION_COLUMNS, _connection_rows(found.connection_set))


def running_info(client_id: str, info: ConsumerRunningInfo) -> dict[str, Any]:
    """What a client said of its consumer: settings, subscriptions, the queues it holds
    (offsets, cached messages, locks), per-topic rates, and the thread dump when asked."""
    queues = [
        {"topic": mq.topic, "brokerName": mq.broker_name, "queueId": mq.queue_id,
         "commitOffset": q.commit_offset, "cachedMsgCount": q.cached_msg_count,
         "cachedMsgMinOffset": q.cached_msg_min_offset,
         "cachedMsgMaxOffset": q.cached_msg_max_offset, "locked": q.locked, "droped": q.droped,
         "lastPullTime": format_timestamp_ms(q.last_pull_timestamp),
         "lastConsumeTime": format_timestamp_ms(q.last_consume_timestamp)}
        for mq, q in sorted(info.mq_table.items())
    ]  # fmt: skip
    status = {topic: s.to_value() for topic, s in sorted(info.status_table.items())}
    return {"clientId": client_id, "properties": dict(sorted(info.properties.items())),
            "subscriptions": _subscriptions(info.subscription_set), "queues": queues,
            "status": status, "jstack": info.jstack}  # fmt: skip


def _print_running_info(session: Session, found: dict[str, Any]) -> None:
    session.out.record(found["properties"], title=f"{found['clientId']}: properties")
    for part in ("subscriptions", "queues"):
        rows: list[dict[str, object]] = found[part]
        if rows:
            session.out.table(tuple(rows[0]), [list(r.values()) for r in rows], title=part)
    status: dict[str, dict[str, object]] = found["status"]
    if status:
        columns = ("topic", *next(iter(status.values())))
        rates_rows = [[topic, *rates.values()] for topic, rates in status.items()]
        session.out.table(columns, rates_rows, title="status")
    if found["jstack"]:
        session.out.record({"jstack": found["jstack"]})


@COMMANDS.command("consumerStatus")
@click.option("-g", "--consumerGroup", "group", required=True, help="Consumer group.")
@click.option("-i", "--clientId", "client_id", help="This client only, in full.")
@click.option("-b", "--brokerAddr", "broker_addr", help="Ask through this broker (host:port).")
@click.option("-s", "--jstack", is_flag=True, help="With the client's thread (task) dump.")
@session_options
def consumer_status(
    session: Session, group: str, client_id: str | None, broker_addr: str | None, jstack: bool
) -> None:
    """What each online client of a group says of its consumer (asked through a broker):
    without -i a line per client and whether they subscribe alike; with -i all of it."""

    async def ask(admin: AdminClient) -> list[dict[str, Any]]:
        if client_id is not None:
            clients = [client_id]
        else:
            found = await admin.consumer_connection(group, broker_addr=broker_addr)
            clients = sorted(c.client_id for c in found.connection_set)
        return [
            running_info(c, await admin.consumer_running_info(
                group, c, jstack=jstack, broker_addr=broker_addr))
            for c in clients
        ]  # fmt: skip

    infos = session.admin(ask)
    if client_id is not None:
        if session.out.as_json:
            session.out.data(infos[0])
        else:
            _print_running_info(session, infos[0])
        return
    same = len({str(i["subscriptions"]) for i in infos}) == 1
    if session.out.as_json:
        session.out.data({"clients": infos, "sameSubscription": same})
        return
    rows = [
        (i["clientId"], len(i["queues"]),
         [f"{s['topic']} ({s['subExpression']})" for s in i["subscriptions"]])
        for i in infos
    ]  # fmt: skip
    verdict = "Same subscription" if same else "WARN: Different subscription"
    session.out.table(
        ("clientId", "queues", "subscriptions"), rows, title=f"{group}: {verdict} in the group"
    )
