"""mqadmin's cluster commands: clusterList, clusterRT."""

from __future__ import annotations

import click

from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.admin.send_rt import CLI_PRODUCER_GROUP, summary, timed_sends
from orbitmq.cli.session import Session, session_options
from orbitmq.client import AdminClient, MQClientError, Producer
from orbitmq.protocol import ClusterInfo

COMMANDS = CommandRegistry("Cluster")


@COMMANDS.command("clusterList")
@session_options
def cluster_list(session: Session) -> None:
    """Every cluster, its broker groups and the address of each broker id."""
    info = session.admin(lambda admin: admin.cluster_info())
    rows = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            for broker_id, addr in sorted(data.broker_addrs.items() if data else []):
                rows.append((cluster, name, broker_id, addr))
    session.out.table(("clusterName", "brokerName", "brokerId", "brokerAddr"), rows)


def brokers_of(info: ClusterInfo, cluster: str | None) -> list[tuple[str, str]]:
    """(cluster, broker name) of every broker group of ``cluster`` (of all when None)."""
    if cluster is not None and cluster not in info.cluster_addr_table:
        known = ", ".join(sorted(info.cluster_addr_table)) or "none"
        raise MQClientError(f"cluster {cluster!r} is not known (clusters: {known})")
    return [
        (c, name)
        for c, names in sorted(info.cluster_addr_table.items())
        if cluster in (None, c)
        for name in sorted(names)
    ]


@COMMANDS.command("clusterRT")
@click.option("-a", "--amount", type=click.IntRange(1), default=100, show_default=True)
@click.option(
    "-s", "--size", type=click.IntRange(1), default=128, show_default=True, help="Body bytes."
)
@click.option("-c", "--cluster", help="Only this cluster (default: every one).")
@session_options
def cluster_rt(session: Session, amount: int, size: int, cluster: str | None) -> None:
    """Time sends to each broker through the topic named after it."""

    async def measure(admin: AdminClient) -> list[dict[str, object]]:
        brokers = brokers_of(await admin.cluster_info(), cluster)
        rows: list[dict[str, object]] = []
        async with Producer(CLI_PRODUCER_GROUP, instance=admin.instance) as producer:
            with session.out.progress("sending", amount * len(brokers)) as advance:
                for cluster_name, name in brokers:
                    sends = await timed_sends(producer, name, amount, size, advance)
                    rows.append({"clusterName": cluster_name, "brokerName": name, **summary(sends)})
        return rows

    rows = session.admin(measure)
    columns = ("clusterName", "brokerName", "successCount", "failCount", "avgRtMs")
    session.out.table(columns, [[r[c] for c in columns] for r in rows])
