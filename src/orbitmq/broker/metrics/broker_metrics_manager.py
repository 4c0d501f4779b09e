"""``BrokerMetricsManager``: the broker's metrics as broker.conf asks for them
(``metricsExporterType``, ``metricsPromExporterHost``, ``metricsPromExporterPort``,
``metricsLabel``): off, or the counters, the collector and the ``/metrics`` endpoint."""

from __future__ import annotations

import logging

from prometheus_client.metrics_core import Metric

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.metrics.broker_metrics_collector import BrokerMetricsCollector
from orbitmq.broker.metrics.broker_metrics_constant import NODE_TYPE_BROKER
from orbitmq.broker.metrics.consumer_lag_calculator import ConsumerLagCalculator
from orbitmq.broker.metrics.message_counters import MessageCounters
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.clock import Clock
from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.remoting import PromExporter, RpcLatencyRecorder, node_labels
from orbitmq.store import MessageStore

log = logging.getLogger(__name__)


class BrokerMetricsManager:
    """Owns, when ``metricsExporterType=PROM``, the hot-path ``MessageCounters``, the
    ``RpcLatencyRecorder``, the collector and the ``PromExporter``; otherwise nothing
    (``counters`` and ``rpc_latency`` are None, so the hot paths skip counting);
    ``rpc_latency`` also None with ``enableRemotingMetrics=false``.

    Labels: ``metricsLabel``'s pairs, node_type "broker", cluster (brokerClusterName) and
    node_id (brokerName), as RocketMQ 5. ``start`` and ``stop`` on the broker's loop."""

    def __init__(
        self,
        broker_config: BrokerConfig,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_manager: ConsumerManager,
        producer_manager: ProducerManager,
        consumer_offset_manager: ConsumerOffsetManager,
        store: MessageStore,
        clock: Clock,
    ) -> None:
        self.broker_config = broker_config
        self.counters: MessageCounters | None = None
        self.rpc_latency: RpcLatencyRecorder | None = None
        self.collector: BrokerMetricsCollector | None = None
        self.exporter: PromExporter | None = None
        exporter_type = broker_config.metrics_exporter_type
        if exporter_type is MetricsExporterType.DISABLE:
            return
        if exporter_type is not MetricsExporterType.PROM:
            log.warning(
                "metricsExporterType=%s is not served (only PROM is): no metrics exported",
                exporter_type.name,
            )
            return
        self.counters = counters = MessageCounters()
        if broker_config.enable_remoting_metrics:
            self.rpc_latency = RpcLatencyRecorder()
        lag_calculator = ConsumerLagCalculator(
            broker_config,
            topic_config_manager,
            subscription_group_manager,
            consumer_manager,
            consumer_offset_manager,
            store,
            counters.pull_offset,
        )
        self.collector = BrokerMetricsCollector(
            node_labels(
                NODE_TYPE_BROKER,
                broker_config.broker_name,
                broker_config.metrics_label,
                cluster=broker_config.broker_cluster_name,
            ),
            broker_config,
            counters,
            lag_calculator,
            topic_config_manager,
            subscription_group_manager,
            consumer_manager,
            producer_manager,
            store,
            clock,
        )

    def families(self) -> list[Metric]:
        """Every broker family, now (on the broker's loop)."""
        if self.collector is None:
            return []
        families = self.collector.families()
        if self.rpc_latency is not None:
            families.extend(self.rpc_latency.families(self.collector.base_labels))
        return families

    def start(self) -> None:
        """Serve ``/metrics`` (on metricsPromExporterHost, else brokerIP1); an OSError for a
        port in use."""
        if self.collector is None or self.exporter is not None:
            return
        config = self.broker_config
        host = config.metrics_prom_exporter_host or config.broker_ip1
        self.exporter = PromExporter(host, config.metrics_prom_exporter_port, self.families)
        try:
            self.exporter.start()
        except BaseException:
            self.exporter = None
            raise

    async def stop(self) -> None:
        exporter, self.exporter = self.exporter, None
        if exporter is not None:
            await exporter.stop()
