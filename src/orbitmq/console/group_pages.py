"""The consumer group pages (list with lag, one group's progress per queue, its connections
and subscriptions, reset by time, delete, the lag its chart polls) and the producer page
(a producer group's connections)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from aiohttp import web

from orbitmq.client import (
    AdminClient,
    ConsumerNotOnlineError,
    ConsumerProgress,
    MQClientError,
)
from orbitmq.console.inputs import required, timestamp_ms, topic_name
from orbitmq.console.page import admin_of, form, redirect, render


@dataclass(slots=True)
class GroupRow:
    """One group on the list: its lag and consume rate summed over brokers and topics."""

    group: str
    lag: int = 0
    consume_tps: float = 0.0
    topics: set[str] = field(default_factory=set)


async def group_rows(admin: AdminClient) -> list[GroupRow]:
    rows: dict[str, GroupRow] = {}
    for addr in (await admin.master_addrs()).values():
        stats_list = await admin.broker_consume_stats(addr)
        for entry in stats_list.consume_stats_list:
            for group, per_topic in entry.items():
                row = rows.setdefault(group, GroupRow(group))
                for stats in per_topic:
                    row.lag += stats.total_diff()
                    row.consume_tps += stats.consume_tps
                    row.topics |= {mq.topic for mq in stats.offset_table}
    return [rows[g] for g in sorted(rows)]


async def group_progress(admin: AdminClient, group: str) -> ConsumerProgress:
    """The group's progress in every topic it has offsets in: through its %RETRY% topic's
    route once it subscribed, else through the topics the brokers hold its offsets for (a
    group an operator made and reset, none of whose consumers ran yet)."""
    try:
        return await admin.consumer_progress(group)
    except MQClientError:
        row = next((r for r in await group_rows(admin) if r.group == group), None)
        if row is None or not row.topics:
            raise
    parts = [await admin.consumer_progress(group, topic) for topic in sorted(row.topics)]
    queues = {q.queue: q for part in parts for q in part.queues}
    ordered = sorted(
        queues.values(), key=lambda q: (q.queue.topic, q.queue.broker_name, q.queue.queue_id)
    )
    return ConsumerProgress(group, tuple(ordered), sum(p.consume_tps for p in parts))


async def groups(request: web.Request) -> web.Response:
    wanted = request.query.get("filter", "").strip().lower()
    rows = [r for r in await group_rows(admin_of(request)) if wanted in r.group.lower()]
    return render(request, "groups.html", {"groups": rows, "filter": wanted})


async def group(request: web.Request) -> web.Response:
    admin = admin_of(request)
    name = request.match_info["group"]
    progress = await group_progress(admin, name)
    try:
        connection = await admin.consumer_connection(name)
    except ConsumerNotOnlineError:
        connection = None
    context = {"group": name, "progress": progress, "connection": connection}
    return render(request, "group.html", context)


async def reset_offsets(request: web.Request) -> web.Response:
    name = request.match_info["group"]
    fields = await form(request)
    topic = topic_name(fields)
    at_ms = timestamp_ms(fields, "time")
    offsets = await admin_of(request).reset_offset_by_timestamp(name, topic, at_ms)
    raise redirect(f"/groups/{name}", f"reset {len(offsets)} queues of {topic}")


async def delete_group(request: web.Request) -> web.Response:
    name = request.match_info["group"]
    await admin_of(request).delete_subscription_group(name, remove_offset=True)
    raise redirect("/groups", f"consumer group {name} deleted")


async def group_stats(request: web.Request) -> web.Response:
    """``{"time_ms", "series": {"lag": n, "consume/s": tps}}`` for the group's chart."""
    name = request.match_info["group"]
    try:
        progress = await group_progress(admin_of(request), name)
        lag, tps = progress.total_lag, progress.consume_tps
    except MQClientError:
        lag, tps = 0, 0.0  # consumed nothing yet
    return web.json_response(
        {"time_ms": time.time_ns() // 1_000_000, "series": {"lag": lag, "consume/s": tps}}
    )


async def producers(request: web.Request) -> web.Response:
    group_name = request.query.get("group", "").strip()
    context: dict[str, object] = {"group": group_name, "topic": "", "connection": None}
    if group_name:
        topic = topic_name(request.query)
        context["topic"] = topic
        context["connection"] = await admin_of(request).producer_connection(
            required(request.query, "group"), topic
        )
    return render(request, "producers.html", context)
