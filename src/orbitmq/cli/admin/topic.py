"""mqadmin's topic commands: updateTopic, deleteTopic, topicList, topicRoute, topicStatus,
topicClusterList, allocateMQ."""

from __future__ import annotations

import json

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.console import fail
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import format_timestamp_ms
from orbitmq.client import AdminClient, allocate_averagely
from orbitmq.client.admin_client import DEFAULT_PERM, DEFAULT_QUEUE_NUMS, QueueStatus
from orbitmq.client.mq_client_instance import subscribe_queues_of
from orbitmq.common import MessageQueue
from orbitmq.common.topic_attributes import format_attributes
from orbitmq.protocol.body import TopicConfig

COMMANDS = CommandRegistry("Topic")


def queue_name(mq: MessageQueue) -> str:
    """``broker:queueId``, how a queue shows in a table cell."""
    return f"{mq.broker_name}:{mq.queue_id}"


@COMMANDS.command("updateTopic")
@click.option("-b", "--brokerAddr", "broker_addr", help="Create it on this master (host:port).")
@click.option("-c", "--clusterName", "cluster", help="Create it on every master of this cluster.")
@click.option("-t", "--topic", required=True, help="Topic name.")
@click.option("-r", "--readQueueNums", "read_nums", type=int, default=DEFAULT_QUEUE_NUMS)
@click.option("-w", "--writeQueueNums", "write_nums", type=int, default=DEFAULT_QUEUE_NUMS)
@click.option("-p", "--perm", type=click.Choice(["2", "4", "6"]), default=str(DEFAULT_PERM),
              help="2: write, 4: read, 6: read and write.")  # fmt: skip
@click.option(
    "-o", "--order", type=click.BOOL, default=False, help="An ordered topic (true|false)."
)
@click.option("-a", "--attributes", help="RocketMQ 5 attributes: +message.type=FIFO adds or "
              "changes, -key deletes, comma separated.")  # fmt: skip
@session_options
def update_topic(
    session: Session,
    broker_addr: str | None,
    cluster: str | None,
    topic: str,
    read_nums: int,
    write_nums: int,
    perm: str,
    order: bool,
    attributes: str | None,
) -> None:
    """Create or update a topic on a broker (-b) or on every master of a cluster (-c);
    -a +message.type=NORMAL|FIFO|DELAY|TRANSACTION sets what it accepts."""
    if (broker_addr is None) == (cluster is None):
        fail("updateTopic: give one of -b/--brokerAddr and -c/--clusterName")
    created = session.admin(
        lambda admin: admin.create_topic(
            topic,
            queue_nums=write_nums,
            read_queue_nums=read_nums,
            perm=int(perm),
            order=order,
            cluster=cluster,
            broker_addr=broker_addr,
            attributes=attributes.strip() if attributes else None,
        )
    )
    session.out.table(
        ("topic", "brokerName", "brokerAddr", "readQueueNums", "writeQueueNums", "perm", "order",
         "attributes"),
        [(topic, n, a, read_nums, write_nums, int(perm), order, attributes or "")
         for n, a in created.items()],
    )  # fmt: skip


@COMMANDS.command("deleteTopic")
@click.option("-t", "--topic", required=True, help="Topic name.")
@click.option("-c", "--clusterName", "cluster", help="Delete it from this cluster (default all).")
@session_options
def delete_topic(session: Session, topic: str, cluster: str | None) -> None:
    """Delete a topic from the masters and the name servers."""
    session.admin(lambda admin: admin.delete_topic(topic, cluster))
    session.out.record({"topic": topic, "cluster": cluster or "*", "deleted": True})


@COMMANDS.command("topicList")
@session_options
def topic_list(session: Session) -> None:
    """Every topic the name servers know (system topics included)."""
    topics = session.admin(lambda admin: admin.list_topics())
    session.out.table(("topic",), [(t,) for t in topics])


@COMMANDS.command("topicRoute")
@click.option("-t", "--topic", required=True, help="Topic name.")
@click.option("-l", "--list", "as_list", is_flag=True, help="A table instead of the route JSON.")
@session_options
def topic_route(session: Session, topic: str, as_list: bool) -> None:
    """The name servers' route of a topic: brokers, addresses, queue counts, permissions."""
    route = session.admin(lambda admin: admin.topic_route(topic))
    if session.out.as_json or not as_list:
        session.out.data(json.loads(route.to_json()))
        return
    queues = {q.broker_name: q for q in route.queue_datas}
    rows = []
    for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
        q = queues.get(broker.broker_name)
        addrs = ", ".join(f"{i}={a}" for i, a in sorted(broker.broker_addrs.items()))
        counts = (q.read_queue_nums, q.write_queue_nums, q.perm) if q else (0, 0, 0)
        rows.append((broker.cluster, broker.broker_name, addrs, *counts))
    session.out.table(
        ("clusterName", "brokerName", "brokerAddrs", "readQueueNums", "writeQueueNums", "perm"),
        rows,
    )


@COMMANDS.command("topicStatus")
@click.option("-t", "--topic", required=True, help="Topic name.")
@session_options
def topic_status(session: Session, topic: str) -> None:
    """Each queue's min and max offset, the store time of its last message, and the
    attributes of the topic on its broker (RocketMQ 5's message.type and the others)."""

    async def status_and_configs(
        admin: AdminClient,
    ) -> tuple[list[QueueStatus], dict[str, TopicConfig]]:
        return await admin.topic_status(topic), await admin.topic_configs(topic)

    status, configs = session.admin(status_and_configs)
    attributes = {name: format_attributes(c.attributes) for name, c in configs.items()}
    session.out.table(
        ("brokerName", "queueId", "minOffset", "maxOffset", "lastUpdated", "attributes"),
        [
            (
                s.broker_name,
                s.queue_id,
                s.min_offset,
                s.max_offset,
                format_timestamp_ms(s.last_update_timestamp_ms),
                attributes.get(s.broker_name, ""),
            )
            for s in status
        ],
    )


@COMMANDS.command("topicClusterList")
@click.option("-t", "--topic", required=True, help="Topic name.")
@session_options
def topic_cluster_list(session: Session, topic: str) -> None:
    """The clusters a topic is served in."""

    async def clusters(admin: AdminClient) -> list[str]:
        route = await admin.topic_route(topic)
        brokers = {b.broker_name for b in route.broker_datas}
        info = await admin.cluster_info()
        return sorted(c for c, names in info.cluster_addr_table.items() if brokers & names)

    session.out.table(("clusterName",), [(c,) for c in session.admin(clusters)])


@COMMANDS.command("allocateMQ")
@click.option("-t", "--topic", required=True, help="Topic name.")
@click.option("-i", "--ipList", "ip_list", required=True, help="Client ids, comma separated.")
@session_options
def allocate_mq(session: Session, topic: str, ip_list: str) -> None:
    """How the averaging strategy shares a topic's queues among the given clients."""
    clients = [ip.strip() for ip in ip_list.split(",") if ip.strip()]
    route = session.admin(lambda admin: admin.topic_route(topic))
    queues = sorted(subscribe_queues_of(topic, route))
    shares = {ip: allocate_averagely(ip, queues, clients) for ip in clients}
    if session.out.as_json:
        session.out.data({ip: [queue_name(q) for q in mqs] for ip, mqs in shares.items()})
        return
    session.out.table(
        ("clientId", "queues"), [(ip, [queue_name(q) for q in mqs]) for ip, mqs in shares.items()]
    )
