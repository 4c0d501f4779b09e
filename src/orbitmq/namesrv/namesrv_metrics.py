"""``NamesrvMetrics``: the name server's Prometheus endpoint (namesrv.conf's
``metricsExporterType=PROM``): the latency of the requests it answers
(``rocketmq_rpc_latency``), how many brokers and topics it routes, and the process metrics."""

from __future__ import annotations

import logging
from typing import Final

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.namesrv.namesrv_config import NamesrvConfig
from orbitmq.namesrv.route_info_manager import RouteInfoManager
from orbitmq.remoting import PromExporter, RpcLatencyRecorder, node_labels

log = logging.getLogger(__name__)

NODE_TYPE_NAMESRV: Final = "namesrv"
#: RocketMQ 5's broker gauge name, here the topics the name server routes.
GAUGE_TOPIC_NUM: Final = "rocketmq_topic_number"
#: The live brokers the name server routes to (OrbitMQ's own name).
GAUGE_BROKER_NUM: Final = "rocketmq_namesrv_broker_number"


class NamesrvMetrics:
    """Owns, when ``metricsExporterType=PROM``, the ``RpcLatencyRecorder`` and the
    ``PromExporter``; otherwise nothing (``rpc_latency`` is None: nothing counted).
    Labels: metricsLabel's pairs, node_type "namesrv", node_id (the address it serves on).
    ``start`` and ``stop`` on the name server's loop."""

    def __init__(self, config: NamesrvConfig, route_info_manager: RouteInfoManager) -> None:
        self.config = config
        self.route_info_manager = route_info_manager
        self.rpc_latency: RpcLatencyRecorder | None = None
        self.exporter: PromExporter | None = None
        self._labels: dict[str, str] = {}
        if config.metrics_exporter_type is MetricsExporterType.PROM:
            self.rpc_latency = RpcLatencyRecorder()
        elif config.metrics_exporter_type is not MetricsExporterType.DISABLE:
            log.warning(
                "metricsExporterType=%s is not served (only PROM is): no metrics exported",
                config.metrics_exporter_type.name,
            )

    def families(self) -> list[Metric]:
        if self.rpc_latency is None:
            return []
        keys, values = list(self._labels), list(self._labels.values())
        routes = self.route_info_manager
        topics = GaugeMetricFamily(GAUGE_TOPIC_NUM, "Routed topic number", labels=keys)
        topics.add_metric(values, len(routes.get_all_topic_list().topic_list))
        brokers = GaugeMetricFamily(GAUGE_BROKER_NUM, "Live broker number", labels=keys)
        brokers.add_metric(values, len(routes.live_broker_addrs()))
        return [topics, brokers, *self.rpc_latency.families(self._labels)]

    def start(self, node_id: str) -> None:
        """Serve ``/metrics``; an OSError for a port in use."""
        if self.rpc_latency is None or self.exporter is not None:
            return
        config = self.config
        self._labels = node_labels(NODE_TYPE_NAMESRV, node_id, config.metrics_label)
        host = config.metrics_prom_exporter_host or config.bind_address
        exporter = PromExporter(host, config.metrics_prom_exporter_port, self.families)
        exporter.start()
        self.exporter = exporter

    async def stop(self) -> None:
        exporter, self.exporter = self.exporter, None
        if exporter is not None:
            await exporter.stop()
