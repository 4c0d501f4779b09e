"""The cluster page: every broker of every cluster with its role, version and put/get rates
(GET_BROKER_RUNTIME_INFO), and the JSON the page's live chart polls."""

from __future__ import annotations

import time
from dataclasses import dataclass

from aiohttp import web

from orbitmq.client import AdminClient
from orbitmq.common import OrbitError
from orbitmq.console.page import admin_of, render
from orbitmq.protocol.body.route import MASTER_ID


@dataclass(frozen=True, slots=True)
class BrokerRow:
    """One broker as the cluster page shows it; ``problem`` when it did not answer."""

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    version: str = ""
    put_tps: float = 0.0
    get_tps: float = 0.0
    put_today: str = ""
    get_today: str = ""
    problem: str = ""

    @property
    def role(self) -> str:
        return "MASTER" if self.broker_id == MASTER_ID else f"SLAVE ({self.broker_id})"


def first_rate(text: str) -> float:
    """The 10 s rate of RocketMQ's "10s 1min 10min" runtime values."""
    parts = text.split()
    try:
        return float(parts[0]) if parts else 0.0
    except ValueError:
        return 0.0


async def broker_rows(admin: AdminClient) -> list[BrokerRow]:
    info = await admin.cluster_info()
    rows: list[BrokerRow] = []
    for cluster, names in sorted(info.cluster_addr_table.items()):
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            for broker_id, addr in sorted(data.broker_addrs.items() if data else ()):
                rows.append(await _broker_row(admin, cluster, name, broker_id, addr))
    return rows


async def _broker_row(
    admin: AdminClient, cluster: str, name: str, broker_id: int, addr: str
) -> BrokerRow:
    try:
        runtime = await admin.broker_runtime_info(addr)
    except (OrbitError, TimeoutError, OSError) as exc:
        # One broker down leaves the others on the page.
        return BrokerRow(cluster, name, broker_id, addr, problem=str(exc) or type(exc).__name__)
    return BrokerRow(
        cluster,
        name,
        broker_id,
        addr,
        version=runtime.get("brokerVersionDesc", ""),
        put_tps=first_rate(runtime.get("putTps", "")),
        get_tps=first_rate(runtime.get("getTransferedTps", "")),
        put_today=runtime.get("msgPutTotalTodayNow", ""),
        get_today=runtime.get("msgGetTotalTodayNow", ""),
    )


async def cluster(request: web.Request) -> web.Response:
    rows = await broker_rows(admin_of(request))
    return render(request, "cluster.html", {"brokers": rows})


async def cluster_stats(request: web.Request) -> web.Response:
    """``{"time_ms", "series": {"<broker> put": tps, "<broker> get": tps}}`` for the chart."""
    series: dict[str, float] = {}
    for row in await broker_rows(admin_of(request)):
        if not row.problem:
            series[f"{row.broker_name} put"] = row.put_tps
            series[f"{row.broker_name} get"] = row.get_tps
    return web.json_response({"time_ms": time.time_ns() // 1_000_000, "series": series})
