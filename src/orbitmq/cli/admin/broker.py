"""mqadmin's broker commands: brokerStatus, getBrokerConfig, updateBrokerConfig,
brokerConsumeStats, statsAll, cleanExpiredCQ, queryCq, sendMsgStatus, and RocketMQ 5's
getColdDataFlowCtrInfo, updateColdDataFlowCtrGroupConfig, removeColdDataFlowCtrGroupConfig
and setCommitLogReadAheadMode."""

from __future__ import annotations

import contextlib
from typing import Any, Final

import click

from orbitmq.cli.admin.cluster import brokers_of
from orbitmq.cli.admin.registry import CommandRegistry
from orbitmq.cli.admin.send_rt import CLI_PRODUCER_GROUP, summary, timed_sends
from orbitmq.cli.console import fail
from orbitmq.cli.session import Session, session_options
from orbitmq.cli.timestamps import format_timestamp_ms
from orbitmq.client import AdminClient, MQBrokerError, NoRouteError, Producer
from orbitmq.common.topic import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX
from orbitmq.protocol import (
    GROUP_GET_NUMS,
    TOPIC_PUT_NUMS,
    BrokerStatsData,
    ConsumeStatsList,
    stats_key,
)

COMMANDS = CommandRegistry("Broker")

#: brokerConsumeStats' default -t (mqadmin's): fetching every group's stats takes a while.
DEFAULT_CONSUME_STATS_TIMEOUT_MS: Final = 50_000
#: queryCq's default -c (mqadmin's).
DEFAULT_CQ_COUNT: Final = 10

_BROKER_ADDR = click.option("-b", "--brokerAddr", "broker_addr", help="A broker (host:port).")
_CLUSTER = click.option(
    "-c", "--clusterName", "cluster", help="Every broker, master and slaves, of this cluster."
)


def _one_target(command: str, broker_addr: str | None, cluster: str | None) -> None:
    if (broker_addr is None) == (cluster is None):
        fail(f"{command}: give one of -b/--brokerAddr and -c/--clusterName")


async def target_addrs(
    admin: AdminClient, broker_addr: str | None, cluster: str | None
) -> list[str]:
    """``broker_addr``, or the address of every broker id of ``cluster``'s broker groups (of
    every cluster when None), as mqadmin's ``-c`` reaches masters and slaves."""
    if broker_addr is not None:
        return [broker_addr]
    info = await admin.cluster_info()
    addrs: list[str] = []
    for _, name in brokers_of(info, cluster):
        data = info.broker_addr_table.get(name)
        addrs += [addr for _, addr in sorted(data.broker_addrs.items())] if data else []
    return addrs


def print_per_server(session: Session, found: dict[str, dict[str, str]]) -> None:
    """Each server's keys and values, sorted by key: a table per server, or JSON by address."""
    if session.out.as_json:
        session.out.data({addr: dict(sorted(table.items())) for addr, table in found.items()})
        return
    for addr, table in found.items():
        session.out.record(dict(sorted(table.items())), title=addr)


@COMMANDS.command("brokerStatus")
@_BROKER_ADDR
@_CLUSTER
@session_options
def broker_status(session: Session, broker_addr: str | None, cluster: str | None) -> None:
    """A broker's runtime keys (RocketMQ's: TPS, offsets, disk ratios, versions ...)."""
    _one_target("brokerStatus", broker_addr, cluster)

    async def status(admin: AdminClient) -> dict[str, dict[str, str]]:
        addrs = await target_addrs(admin, broker_addr, cluster)
        return {addr: await admin.broker_runtime_info(addr) for addr in addrs}

    print_per_server(session, session.admin(status))


@COMMANDS.command("getBrokerConfig")
@_BROKER_ADDR
@_CLUSTER
@session_options
def get_broker_config(session: Session, broker_addr: str | None, cluster: str | None) -> None:
    """Every setting of a broker (or of each broker of a cluster) by RocketMQ's key."""
    _one_target("getBrokerConfig", broker_addr, cluster)

    async def configs(admin: AdminClient) -> dict[str, dict[str, str]]:
        addrs = await target_addrs(admin, broker_addr, cluster)
        return {addr: await admin.broker_config(addr) for addr in addrs}

    print_per_server(session, session.admin(configs))


@COMMANDS.command("updateBrokerConfig")
@_BROKER_ADDR
@_CLUSTER
@click.option("-k", "--key", required=True, help="Config key (RocketMQ's name).")
@click.option("-v", "--value", required=True, help="Its new value.")
@session_options
def update_broker_config(
    session: Session, broker_addr: str | None, cluster: str | None, key: str, value: str
) -> None:
    """Change a broker setting at run time; the broker saves it to its config file."""
    _one_target("updateBrokerConfig", broker_addr, cluster)

    async def update(admin: AdminClient) -> list[tuple[str, str, str, str]]:
        rows = []
        for addr in await target_addrs(admin, broker_addr, cluster):
            note = await admin.update_broker_config(addr, {key: value})
            rows.append((addr, key, value, note or "applied and saved"))
        return rows

    session.out.table(("brokerAddr", "key", "value", "result"), session.admin(update))


@COMMANDS.command("brokerConsumeStats")
@click.option("-b", "--brokerAddr", "broker_addr", required=True, help="Broker (host:port).")
@click.option(
    "-t", "--timeoutMillis", "timeout_ms", type=click.IntRange(1),
    default=DEFAULT_CONSUME_STATS_TIMEOUT_MS, show_default=True, help="Request timeout.",
)  # fmt: skip
@click.option(
    "-l", "--level", type=int, default=0, show_default=True, help="Only queues with diff >= this."
)
@click.option(
    "-o", "--order", type=click.BOOL, default=False, help="Only ordered topics (true|false)."
)
@session_options
def broker_consume_stats(
    session: Session, broker_addr: str, timeout_ms: int, level: int, order: bool
) -> None:
    """Every group's offsets and diff on each queue of a broker, and the Diff Total."""
    stats = session.admin(
        lambda admin: admin.broker_consume_stats(broker_addr, is_order=order),
        timeout_ms=timeout_ms,
    )
    columns = ("topic", "group", "brokerName", "queueId", "brokerOffset", "consumerOffset",
               "diff", "lastTime")  # fmt: skip
    rows = _consume_rows(stats, level)
    if session.out.as_json:
        queues = [dict(zip(columns, row, strict=True)) for row in rows]
        session.out.data(
            {"brokerAddr": broker_addr, "diffTotal": stats.total_diff, "queues": queues}
        )
        return
    session.out.table(columns, rows, title=f"Diff Total: {stats.total_diff}")


def _consume_rows(stats: ConsumeStatsList, level: int) -> list[tuple[object, ...]]:
    """brokerConsumeStats' rows: each group's queues, those with a diff under ``level`` left
    out."""
    rows: list[tuple[object, ...]] = []
    for by_group in stats.consume_stats_list:
        for group, group_stats in by_group.items():
            for consume_stats in group_stats:
                for mq, w in sorted(consume_stats.offset_table.items()):
                    diff = w.broker_offset - w.consumer_offset
                    last = format_timestamp_ms(w.last_timestamp)
                    if diff >= level:
                        rows.append((mq.topic, group, mq.broker_name, mq.queue_id,
                                     w.broker_offset, w.consumer_offset, diff, last))  # fmt: skip
    return rows


def sum_24_hours(data: BrokerStatsData) -> int:
    """The day's count, or the hour's or the minute's while the longer window has none yet
    (mqadmin statsAll's 24-hour figure)."""
    for window in (data.stats_day, data.stats_hour, data.stats_minute):
        if window.sum:
            return window.sum
    return 0


class _Traffic:
    """The summed minute TPS and 24-hour count of one statistic over a topic's masters.
    Filled by one coroutine."""

    def __init__(self) -> None:
        self.tps = 0.0
        self.day = 0

    async def add(self, admin: AdminClient, masters: list[str], name: str, key: str) -> None:
        for addr in masters:
            try:
                data = await admin.view_stats(addr, name, key)
            except MQBrokerError:  # nothing counted under this key on that broker yet
                continue
            self.tps += data.stats_minute.tps
            self.day += sum_24_hours(data)


async def _accumulation(admin: AdminClient, masters: list[str], group: str, topic: str) -> int:
    """The group's unconsumed messages in the topic on its masters (0 when it has none)."""
    timeout_s = admin.config.mq_client_api_timeout_s
    total = 0
    for addr in masters:
        try:
            stats = await admin.api.get_consume_stats(addr, group, topic, timeout_s)
        except MQBrokerError:  # the group has no offsets on that broker
            continue
        total += stats.total_diff()
    return max(total, 0)


async def topic_stats(admin: AdminClient, topic: str, active: bool) -> list[dict[str, object]]:
    """statsAll's rows of one topic: one per consuming group, or one with no group."""
    route = await admin.topic_route(topic)
    masters = [b.broker_addrs[0] for b in route.broker_datas if 0 in b.broker_addrs]
    put = _Traffic()
    await put.add(admin, masters, TOPIC_PUT_NUMS, topic)
    rows: list[dict[str, object]] = []
    groups = await admin.query_topic_consume_by_who(topic)
    for group in groups:
        get = _Traffic()
        await get.add(admin, masters, GROUP_GET_NUMS, stats_key(topic, group))
        if not active or put.day or get.day:
            rows.append({"topic": topic, "consumerGroup": group,
                         "accumulation": await _accumulation(admin, masters, group, topic),
                         "inTps": round(put.tps, 2), "outTps": round(get.tps, 2),
                         "inMsg24Hour": put.day, "outMsg24Hour": get.day})  # fmt: skip
    if not groups and (not active or put.day):
        rows.append({"topic": topic, "consumerGroup": None, "accumulation": 0,
                     "inTps": round(put.tps, 2), "outTps": None, "inMsg24Hour": put.day,
                     "outMsg24Hour": None})  # fmt: skip
    return rows


@COMMANDS.command("statsAll")
@click.option("-a", "--activeTopic", "active", is_flag=True, help="Only topics with traffic.")
@click.option("-t", "--topic", help="Only this topic.")
@session_options
def stats_all(session: Session, active: bool, topic: str | None) -> None:
    """Each topic's in TPS and 24-hour count, and each consuming group's accumulation, out
    TPS and 24-hour count (the brokers' 10-second samples; retry and DLQ topics left out)."""

    async def collect(admin: AdminClient) -> list[dict[str, object]]:
        topics = [
            t
            for t in await admin.list_topics()
            if not t.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))
            and topic in (None, t)
        ]
        if topic is not None and not topics:
            raise NoRouteError(f"topic {topic!r} is not known to the name servers")
        rows: list[dict[str, object]] = []
        with session.out.progress("topics", len(topics)) as advance:
            for name in topics:
                # A topic listed but served by no broker (deleted meanwhile) has no row.
                with contextlib.suppress(NoRouteError):
                    rows += await topic_stats(admin, name, active)
                advance()
        return rows

    rows = session.admin(collect)
    if session.out.as_json:
        session.out.data(rows)
        return
    # mqadmin's columns; a topic nobody consumes says NO_CONSUMER where the out count goes.
    columns = ("#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS",
               "#InMsg24Hour", "#OutMsg24Hour")  # fmt: skip
    cells = [
        [*[*row.values()][:-1], row["outMsg24Hour"] if row["consumerGroup"] else "NO_CONSUMER"]
        for row in rows
    ]
    session.out.table(columns, cells)


@COMMANDS.command("cleanExpiredCQ")
@_BROKER_ADDR
@click.option("-c", "--cluster", help="Every broker of this cluster (default: of every one).")
@session_options
def clean_expired_cq(session: Session, broker_addr: str | None, cluster: str | None) -> None:
    """Drop the consume queues whose messages retention already deleted."""

    async def clean(admin: AdminClient) -> list[tuple[str, bool]]:
        addrs = await target_addrs(admin, broker_addr, cluster)
        return [(addr, await admin.clean_expired_cq(addr)) for addr in addrs]

    session.out.table(("brokerAddr", "cleaned"), session.admin(clean))


@COMMANDS.command("queryCq")
@click.option("-t", "--topic", required=True, help="Topic.")
@click.option("-q", "--queue", "queue_id", type=click.IntRange(0), required=True, help="Queue id.")
@click.option("-i", "--index", type=click.IntRange(0), required=True, help="First unit's index.")
@click.option("-c", "--count", type=click.IntRange(1), default=DEFAULT_CQ_COUNT, show_default=True)
@click.option(
    "-b", "--broker", "broker_addr", help="Broker (host:port); default: the first master."
)
@click.option("-g", "--consumer", "group", help="Show the group's subscription and filter result.")
@session_options
def query_cq(
    session: Session, topic: str, queue_id: int, index: int, count: int,
    broker_addr: str | None, group: str | None,
) -> None:  # fmt: skip
    """Raw units of a consume queue: commit log offset, size, tag hash (and with -g whether
    the group's subscription lets each pass)."""

    async def query(admin: AdminClient) -> dict[str, Any]:
        addr = broker_addr
        if addr is None:
            route = await admin.topic_route(topic)
            addr = next(b.broker_addrs[0] for b in route.broker_datas if 0 in b.broker_addrs)
        body = await admin.query_cq(addr, topic, queue_id, index, count, group)
        units = [
            {"idx": index + n, **unit.to_value()} for n, unit in enumerate(body.queue_data or [])
        ]
        subscription = body.subscription_data.to_value() if body.subscription_data else None
        return {"brokerAddr": addr, "maxQueueIndex": body.max_queue_index,
                "minQueueIndex": body.min_queue_index, "subscriptionData": subscription,
                "filterData": body.filter_data, "queueData": units}  # fmt: skip

    found = session.admin(query)
    if session.out.as_json:
        session.out.data(found)
        return
    if found["subscriptionData"] is not None:
        session.out.data({"subscriptionData": found["subscriptionData"]})
    units: list[dict[str, object]] = found["queueData"]
    columns = ("idx", "physicOffset", "physicSize", "tagsCode", "eval", "msg")
    session.out.table(
        columns,
        [[u.get(c) for c in columns] for u in units],
        title=f"{found['brokerAddr']} max: {found['maxQueueIndex']}, min: {found['minQueueIndex']}",
    )


@COMMANDS.command("sendMsgStatus")
@click.option("-b", "--brokerName", "broker", required=True, help="Broker name.")
@click.option("-s", "--messageSize", "size", type=click.IntRange(1), default=128, show_default=True)
@click.option("-c", "--count", type=click.IntRange(1), default=50, show_default=True)
@session_options
def send_msg_status(session: Session, broker: str, size: int, count: int) -> None:
    """Time sends to the topic named after a broker (each broker serves one)."""

    async def measure() -> dict[str, object]:
        async with Producer(CLI_PRODUCER_GROUP, client_config=session.client_config()) as producer:
            with session.out.progress(f"sending to {broker}", count) as advance:
                sends = await timed_sends(producer, broker, count, size, advance)
        return {"brokerName": broker, **summary(sends)}

    session.out.record(session.run(measure()))


@COMMANDS.command("getColdDataFlowCtrInfo")
@_BROKER_ADDR
@_CLUSTER
@session_options
def get_cold_data_flow_ctr_info(
    session: Session, broker_addr: str | None, cluster: str | None
) -> None:
    """Each consumer group's cold reads in the current 5 s window and the thresholds."""
    _one_target("getColdDataFlowCtrInfo", broker_addr, cluster)

    async def infos(admin: AdminClient) -> dict[str, dict[str, Any]]:
        addrs = await target_addrs(admin, broker_addr, cluster)
        return {addr: await admin.cold_data_flow_ctr_info(addr) for addr in addrs}

    found = session.admin(infos)
    for info in found.values():
        # mqadmin shows the two times as dates.
        for acc in info.get("runtimeTable", {}).values():
            acc["lastColdReadTimeFormat"] = format_timestamp_ms(acc.pop("lastColdReadTimeMills"))
            acc["createTimeFormat"] = format_timestamp_ms(acc.pop("createTimeMills"))
    if session.out.as_json:
        session.out.data(found)
        return
    for addr, info in found.items():
        rows = [
            (group, acc["coldAcc"], acc["lastColdReadTimeFormat"], acc["createTimeFormat"])
            for group, acc in sorted(info.get("runtimeTable", {}).items())
        ]
        session.out.table(("group", "coldAcc", "lastColdReadTime", "createTime"), rows)
        session.out.record(
            {
                "configTable": info.get("configTable", {}),
                "cgColdReadThreshold": info.get("cgColdReadThreshold"),
                "globalColdReadThreshold": info.get("globalColdReadThreshold"),
                "globalAcc": info.get("globalAcc"),
            },
            title=addr,
        )


@COMMANDS.command("updateColdDataFlowCtrGroupConfig")
@_BROKER_ADDR
@_CLUSTER
@click.option("-g", "--consumerGroup", "group", required=True, help="The consumer group.")
@click.option(
    "-v", "--threshold", type=click.IntRange(0), required=True,
    help="Its cold read threshold: bytes per 5 s window.",
)  # fmt: skip
@session_options
def update_cold_data_flow_ctr_group_config(
    session: Session, broker_addr: str | None, cluster: str | None, group: str, threshold: int
) -> None:
    """Give a consumer group a cold read threshold of its own."""
    _one_target("updateColdDataFlowCtrGroupConfig", broker_addr, cluster)

    async def update(admin: AdminClient) -> list[tuple[str, str]]:
        rows = []
        for addr in await target_addrs(admin, broker_addr, cluster):
            await admin.update_cold_data_flow_ctr_group_config(addr, {group: threshold})
            rows.append((addr, "updateColdDataFlowCtrGroupConfig success"))
        return rows

    session.out.table(("brokerAddr", "result"), session.admin(update))


@COMMANDS.command("removeColdDataFlowCtrGroupConfig")
@_BROKER_ADDR
@_CLUSTER
@click.option("-g", "--consumerGroup", "group", required=True, help="The consumer group.")
@session_options
def remove_cold_data_flow_ctr_group_config(
    session: Session, broker_addr: str | None, cluster: str | None, group: str
) -> None:
    """Drop a consumer group's own cold read threshold (cgColdReadThreshold applies again)."""
    _one_target("removeColdDataFlowCtrGroupConfig", broker_addr, cluster)

    async def remove(admin: AdminClient) -> list[tuple[str, str]]:
        rows = []
        for addr in await target_addrs(admin, broker_addr, cluster):
            await admin.remove_cold_data_flow_ctr_group_config(addr, group)
            rows.append((addr, "remove broker cold read threshold success"))
        return rows

    session.out.table(("brokerAddr", "result"), session.admin(remove))


@COMMANDS.command("setCommitLogReadAheadMode")
@_BROKER_ADDR
@_CLUSTER
@click.option(
    "-m", "--commitLogReadAheadMode", "mode", type=click.Choice(["0", "1"]), required=True,
    help="0: read-ahead (the default), 1: random reads.",
)  # fmt: skip
@session_options
def set_commit_log_read_ahead_mode(
    session: Session, broker_addr: str | None, cluster: str | None, mode: str
) -> None:
    """Set how every commit log file is read: with the kernel's read-ahead or without."""
    _one_target("setCommitLogReadAheadMode", broker_addr, cluster)

    async def set_mode(admin: AdminClient) -> list[tuple[str, str]]:
        addrs = await target_addrs(admin, broker_addr, cluster)
        return [
            (addr, await admin.set_commit_log_read_ahead_mode(addr, int(mode))) for addr in addrs
        ]

    session.out.table(("brokerAddr", "result"), session.admin(set_mode))
