"""``PromExporter``: a server's Prometheus endpoint (RocketMQ 5's ``metricsExporterType=PROM``
on ``metricsPromExporterHost:metricsPromExporterPort``), serving ``/metrics`` in Prometheus'
text format: the server's own families, gathered on its event loop when scraped, and the
process metrics of prometheus-client."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Iterable
from typing import Final
from wsgiref.simple_server import WSGIServer

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    start_http_server,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)

#: RocketMQ 5's default ``metricsPromExporterPort``.
DEFAULT_PROM_EXPORTER_PORT: Final = 5557
#: RocketMQ 5's label names shared by every family of a node.
LABEL_CLUSTER_NAME: Final = "cluster"
LABEL_NODE_TYPE: Final = "node_type"
LABEL_NODE_ID: Final = "node_id"
#: How long a scrape waits for the event loop to gather the families.
SCRAPE_TIMEOUT_S: Final = 10.0

Gather = Callable[[], Iterable[Metric]]


def node_labels(
    node_type: str, node_id: str, metrics_label: str = "", cluster: str | None = None
) -> dict[str, str]:
    """The labels every family of a node carries: ``metricsLabel``'s pairs
    ("k1:v1,k2:v2", malformed pairs skipped as RocketMQ does), then node type, cluster and
    node id."""
    labels: dict[str, str] = {}
    for item in metrics_label.split(","):
        key, sep, value = item.partition(":")
        if not item:
            continue
        if not sep or not key or ":" in value:
            log.warning("metricsLabel: %r is not key:value, skipped", item)
            continue
        labels[key] = value
    labels[LABEL_NODE_TYPE] = node_type
    if cluster is not None:
        labels[LABEL_CLUSTER_NAME] = cluster
    labels[LABEL_NODE_ID] = node_id
    return labels


class _LoopCollector(Collector):
    """Runs ``gather`` on the server's event loop, where the state it reads lives, and
    hands the families to the scraping thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop, gather: Gather) -> None:
        self._loop = loop
        self._gather = gather

    def collect(self) -> Iterable[Metric]:
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:  # a scrape from the loop itself (generate_latest in a test)
            return list(self._gather())

        async def gather() -> list[Metric]:
            return list(self._gather())

        future = asyncio.run_coroutine_threadsafe(gather(), self._loop)
        return future.result(timeout=SCRAPE_TIMEOUT_S)


class PromExporter:
    """Owns one ``/metrics`` HTTP endpoint (prometheus-client's server, on a thread of its
    own) and its registry: the families of ``gather`` plus the process, platform and GC
    collectors. ``start`` and ``stop`` from the event loop that ``gather`` reads."""

    def __init__(self, host: str, port: int, gather: Gather) -> None:
        self.host = host
        self.requested_port = port
        self._gather = gather
        self.registry = CollectorRegistry(auto_describe=False)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port, once started."""
        if self._server is None:
            raise RuntimeError("the metrics exporter is not started")
        return int(self._server.server_port)

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> None:
        """Bind and serve; an OSError (port in use) propagates."""
        if self._server is not None:
            return
        loop = asyncio.get_running_loop()
        self.registry.register(_LoopCollector(loop, self._gather))
        for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
            self.registry.register(collector)
        self._server, self._thread = start_http_server(
            self.requested_port, addr=self.host, registry=self.registry
        )
        log.info("Prometheus metrics served at %s", self.url)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        # shutdown() waits for serve_forever's poll (0.5 s): off the loop, which a scrape
        # in flight may be waiting on.
        await asyncio.to_thread(server.shutdown)
        server.server_close()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        self.registry = CollectorRegistry(auto_describe=False)
