"""The broker's Prometheus metrics (RocketMQ 5's ``BrokerMetricsManager``): hot-path
counters of stored and pulled messages, gauges worked out at scrape time (lag, connections,
storage), and the ``/metrics`` endpoint."""

from orbitmq.broker.metrics.broker_metrics_collector import BrokerMetricsCollector
from orbitmq.broker.metrics.broker_metrics_manager import BrokerMetricsManager
from orbitmq.broker.metrics.consumer_lag_calculator import ConsumerLag, ConsumerLagCalculator
from orbitmq.broker.metrics.message_counters import MessageCounters

__all__ = [
    "BrokerMetricsCollector",
    "BrokerMetricsManager",
    "ConsumerLag",
    "ConsumerLagCalculator",
    "MessageCounters",
]
