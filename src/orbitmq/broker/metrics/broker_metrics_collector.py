"""``BrokerMetricsCollector``: the broker's Prometheus families, built at scrape time from
the hot-path counters, the client registries, the offsets and the store (RocketMQ 5's
``BrokerMetricsManager`` gauges and ``DefaultStoreMetricsManager``)."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Mapping

from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.metrics import broker_metrics_constant as k
from orbitmq.broker.metrics.consumer_lag_calculator import ConsumerLagCalculator
from orbitmq.broker.metrics.message_counters import MessageCounters
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common.clock import Clock
from orbitmq.common.topic import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX, is_system_topic
from orbitmq.protocol import LanguageCode
from orbitmq.protocol.body.heartbeat import ConsumeType
from orbitmq.remoting.rpc_metrics import LABEL_PROTOCOL_TYPE, PROTOCOL_TYPE_REMOTING
from orbitmq.store import MessageStore

#: ``MQVersion.Version``'s ordinal of V4_0_0_SNAPSHOT; from there on each x.y.z has a
#: SNAPSHOT and a release, up to V5_9_9 and then HIGHER_VERSION.
_V4_0_0_SNAPSHOT = 212
_HIGHER_VERSION = _V4_0_0_SNAPSHOT + 400
#: ``ConsumeType.getTypeCN()``.
_CONSUME_MODES: dict[ConsumeType | None, str] = {
    ConsumeType.CONSUME_ACTIVELY: "pull",
    ConsumeType.CONSUME_PASSIVELY: "push",
    ConsumeType.CONSUME_POP: "pop",
}


def version_desc(version: int) -> str:
    """RocketMQ's ``MQVersion.getVersionDesc`` in lower case ("v4_9_8"); versions before
    4.0 are given as their number."""
    if version >= _HIGHER_VERSION:
        return "higher_version"
    if version < _V4_0_0_SNAPSHOT:
        return str(version)
    index = version - _V4_0_0_SNAPSHOT
    major, rest = 4 + index // 200, index % 200
    name = f"v{major}_{rest // 20}_{rest % 20 // 2}"
    return name if rest % 2 else f"{name}_snapshot"


def _flag(value: bool) -> str:
    return "true" if value else "false"


def is_system_group(group: str) -> bool:
    return group.lower().startswith(k.CID_RMQ_SYS_PREFIX.lower())


def _is_retry_or_dlq(topic: str) -> bool:
    return topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX))


def _language(language: LanguageCode | int) -> str:
    return language.name.lower() if isinstance(language, LanguageCode) else str(language)


class BrokerMetricsCollector:
    """Reads everything, owns nothing but the base labels. ``families`` runs on the broker's
    event loop (the exporter calls it there), as the state it reads is loop-confined."""

    def __init__(
        self,
        base_labels: Mapping[str, str],
        broker_config: BrokerConfig,
        counters: MessageCounters,
        lag_calculator: ConsumerLagCalculator,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_manager: ConsumerManager,
        producer_manager: ProducerManager,
        store: MessageStore,
        clock: Clock,
    ) -> None:
        self.base_labels = dict(base_labels)
        self.broker_config = broker_config
        self.counters = counters
        self.lag_calculator = lag_calculator
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self.consumer_manager = consumer_manager
        self.producer_manager = producer_manager
        self.store = store
        self.clock = clock

    def families(self) -> list[Metric]:
        return [
            *self._incoming(),
            *self._outgoing(),
            *self._stats(),
            *self._connections(),
            *self._lag(),
            *self._storage(),
        ]

    def _keys(self, *extra: str) -> list[str]:
        return [*self.base_labels, *extra]

    def _values(self, *extra: str) -> list[str]:
        return [*self.base_labels.values(), *extra]

    def _incoming(self) -> list[Metric]:
        """Stored messages by topic and type; the retry and DLQ topics are not counted
        (RocketMQ counts a send back as neither in nor out)."""
        keys = self._keys(k.LABEL_TOPIC, k.LABEL_MESSAGE_TYPE, k.LABEL_IS_SYSTEM)
        messages = CounterMetricFamily(
            k.COUNTER_MESSAGES_IN_TOTAL, "Total number of incoming messages", labels=keys
        )
        throughput = CounterMetricFamily(
            k.COUNTER_THROUGHPUT_IN_TOTAL, "Total traffic of incoming messages", labels=keys
        )
        size = HistogramMetricFamily(
            k.HISTOGRAM_MESSAGE_SIZE, "Incoming messages size (bytes)", labels=keys
        )
        bounds = [*(repr(float(b)) for b in k.MESSAGE_SIZE_BUCKETS), "+Inf"]
        for topic, message_type, totals in self.counters.incoming():
            if _is_retry_or_dlq(topic):
                continue
            values = self._values(topic, message_type, _flag(is_system_topic(topic)))
            messages.add_metric(values, totals.messages)
            throughput.add_metric(values, totals.stored_bytes)
            running = 0
            buckets: list[tuple[str, float]] = []
            for bound, count in zip(bounds, totals.buckets, strict=True):
                running += count
                buckets.append((bound, running))
            size.add_metric(values, buckets, totals.size_sum)
        return [messages, throughput, size]

    def _outgoing(self) -> list[Metric]:
        keys = self._keys(k.LABEL_TOPIC, k.LABEL_CONSUMER_GROUP, k.LABEL_IS_SYSTEM)
        messages = CounterMetricFamily(
            k.COUNTER_MESSAGES_OUT_TOTAL, "Total number of outgoing messages", labels=keys
        )
        throughput = CounterMetricFamily(
            k.COUNTER_THROUGHPUT_OUT_TOTAL, "Total traffic of outgoing messages", labels=keys
        )
        for (topic, group), (count, total_bytes) in sorted(self.counters.outgoing.items()):
            if _is_retry_or_dlq(topic):
                continue
            system = is_system_topic(topic) or is_system_group(group)
            values = self._values(topic, group, _flag(system))
            messages.add_metric(values, count)
            throughput.add_metric(values, total_bytes)
        return [messages, throughput]

    def _stats(self) -> list[Metric]:
        gauges = (
            (k.GAUGE_BROKER_PERMISSION, "Broker permission", self.broker_config.broker_permission),
            (
                k.GAUGE_TOPIC_NUM,
                "Active topic number",
                len(self.topic_config_manager.topic_names()),
            ),
            (
                k.GAUGE_CONSUMER_GROUP_NUM,
                "Active subscription group number",
                len(self.subscription_group_manager.group_names()),
            ),
        )
        families: list[Metric] = []
        for name, documentation, value in gauges:
            family = GaugeMetricFamily(name, documentation, labels=self._keys())
            family.add_metric(self._values(), value)
            families.append(family)
        return families

    def _connections(self) -> list[Metric]:
        producers: Counter[tuple[str, str]] = Counter()
        for group in self.producer_manager.groups():
            for info in self.producer_manager.get_group_channel_table(group).values():
                producers[(_language(info.language), version_desc(info.version))] += 1
        producer_family = GaugeMetricFamily(
            k.GAUGE_PRODUCER_CONNECTIONS,
            "Producer connections",
            labels=self._keys(k.LABEL_LANGUAGE, k.LABEL_VERSION, LABEL_PROTOCOL_TYPE),
        )
        for (language, version), count in sorted(producers.items()):
            producer_family.add_metric(
                self._values(language, version, PROTOCOL_TYPE_REMOTING), count
            )
        consumers: Counter[tuple[str, str, str, str]] = Counter()
        for group in self.consumer_manager.groups():
            group_info = self.consumer_manager.get_consumer_group_info(group)
            if group_info is None:
                continue
            mode = _CONSUME_MODES.get(group_info.consume_type, "")
            for info in group_info.channel_info_table.values():
                consumers[(group, _language(info.language), version_desc(info.version), mode)] += 1
        consumer_family = GaugeMetricFamily(
            k.GAUGE_CONSUMER_CONNECTIONS,
            "Consumer connections",
            labels=self._keys(
                k.LABEL_CONSUMER_GROUP,
                k.LABEL_LANGUAGE,
                k.LABEL_VERSION,
                k.LABEL_CONSUME_MODE,
                LABEL_PROTOCOL_TYPE,
                k.LABEL_IS_SYSTEM,
            ),
        )
        for (group, language, version, mode), count in sorted(consumers.items()):
            values = self._values(
                group,
                language,
                version,
                mode,
                PROTOCOL_TYPE_REMOTING,
                _flag(is_system_group(group)),
            )
            consumer_family.add_metric(values, count)
        return [producer_family, consumer_family]

    def _lag(self) -> list[Metric]:
        keys = self._keys(
            k.LABEL_CONSUMER_GROUP, k.LABEL_TOPIC, k.LABEL_IS_RETRY, k.LABEL_IS_SYSTEM
        )
        lag_messages = GaugeMetricFamily(
            k.GAUGE_CONSUMER_LAG_MESSAGES, "Consumer lag messages", labels=keys
        )
        lag_latency = GaugeMetricFamily(
            k.GAUGE_CONSUMER_LAG_LATENCY, "Consumer lag time (milliseconds)", labels=keys
        )
        inflight = GaugeMetricFamily(
            k.GAUGE_CONSUMER_INFLIGHT_MESSAGES, "Consumer inflight messages", labels=keys
        )
        queueing = GaugeMetricFamily(
            k.GAUGE_CONSUMER_QUEUEING_LATENCY, "Consumer queueing time (milliseconds)", labels=keys
        )
        ready = GaugeMetricFamily(
            k.GAUGE_CONSUMER_READY_MESSAGES, "Consumer ready messages", labels=keys
        )
        now_ms = self.clock.now_ms()
        for result in self.lag_calculator.calculate():
            system = is_system_topic(result.topic) or is_system_group(result.group)
            values = self._values(result.group, result.topic, "false", _flag(system))
            lag_messages.add_metric(values, result.lag)
            lag_latency.add_metric(values, _age_ms(now_ms, result.earliest_unconsumed_timestamp))
            inflight.add_metric(values, result.inflight)
            queueing.add_metric(values, _age_ms(now_ms, result.earliest_unpulled_timestamp))
            ready.add_metric(values, result.ready)
        return [lag_messages, lag_latency, inflight, queueing, ready]

    def _storage(self) -> list[Metric]:
        keys = self._keys(k.LABEL_STORAGE_TYPE, k.LABEL_STORAGE_MEDIUM)
        values = self._values(k.DEFAULT_STORAGE_TYPE, k.DEFAULT_STORAGE_MEDIUM)
        families: list[Metric] = []
        try:
            usage = shutil.disk_usage(self.store.config.store_path_root_dir)
        except OSError:
            usage = None
        if usage is not None:
            size = GaugeMetricFamily(
                k.GAUGE_STORAGE_SIZE, "Broker storage size (bytes)", labels=keys
            )
            size.add_metric(values, usage.total - usage.free)
            families.append(size)
        flush_behind = GaugeMetricFamily(
            k.GAUGE_STORAGE_FLUSH_BEHIND, "Broker flush behind bytes", labels=keys
        )
        flush_behind.add_metric(
            values, max(self.store.max_phy_offset - self.store.flushed_phy_offset, 0)
        )
        dispatch_behind = GaugeMetricFamily(
            k.GAUGE_STORAGE_DISPATCH_BEHIND, "Broker dispatch behind bytes", labels=keys
        )
        dispatch_behind.add_metric(values, max(self.store.dispatch_behind_bytes, 0))
        return [*families, flush_behind, dispatch_behind]


def _age_ms(now_ms: int, timestamp: int) -> int:
    """How long ago ``timestamp`` was (0: none)."""
    return max(now_ms - timestamp, 0) if timestamp else 0
