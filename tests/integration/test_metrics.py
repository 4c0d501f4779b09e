"""Prometheus metrics (issue 17 §3): a broker and a name server with
``metricsExporterType=PROM`` serve ``/metrics`` over HTTP; after real sends and pulls the
scraped text, parsed by prometheus-client's own parser, carries RocketMQ 5's names, labels
and the right values."""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from orbitmq.client import Producer
from orbitmq.client.admin_client import AdminClient
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.common import message_const as mc
from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION
from orbitmq.remoting import PromExporter
from orbitmq.testing import InProcessCluster

TOPIC = "MetricsTopic"
GROUP = "metrics_cg"
BROKER_LABELS = {
    "cluster": "DefaultCluster",
    "node_type": "broker",
    "node_id": "broker-a",
    "env": "test",
}
METRICS_ON = {
    "metrics_exporter_type": MetricsExporterType.PROM,
    "metrics_prom_exporter_port": 0,
    "metrics_label": "env:test",
}


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(
        tmp_path / "cluster", broker_settings=METRICS_ON, namesrv_settings=METRICS_ON
    ) as running:
        yield running


async def scrape(exporter: PromExporter | None) -> list[Sample]:
    """GET /metrics as Prometheus does (from a thread: the broker's loop is this one, and
    the scrape gathers on it) and parse it with prometheus-client's parser."""
    assert exporter is not None

    def get() -> str:
        with urllib.request.urlopen(exporter.url, timeout=10) as response:
            assert response.status == 200
            text: str = response.read().decode()
            return text

    text = await asyncio.to_thread(get)
    return [sample for family in text_string_to_metric_families(text) for sample in family.samples]


def value(samples: list[Sample], name: str, **labels: str) -> float:
    """The one sample called ``name`` whose labels include ``labels``."""
    found = [s for s in samples if s.name == name and labels.items() <= s.labels.items()]
    assert len(found) == 1, (name, labels, found)
    return found[0].value


async def heartbeat(admin: AdminClient, addr: str) -> None:
    """A pull consumer of GROUP online, subscribed to TOPIC."""
    consumer = ConsumerData(
        group_name=GROUP,
        consume_type=ConsumeType.CONSUME_ACTIVELY,
        message_model=MessageModel.CLUSTERING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        subscription_data_set=[SubscriptionData(topic=TOPIC, sub_string="*")],
    )
    heartbeat_data = HeartbeatData(client_id="metrics-test", consumer_data_set=[consumer])
    await admin.api.send_heartbeat(addr, heartbeat_data, 3.0)


async def pull(admin: AdminClient, addr: str, queue_id: int, max_nums: int) -> list[MessageExt]:
    header = PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=TOPIC,
        queue_id=queue_id,
        queue_offset=0,
        max_msg_nums=max_nums,
        sys_flag=FLAG_SUBSCRIPTION,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    result = await admin.api.pull_message(addr, header, None, 3.0)
    return result.messages


async def test_sends_and_pulls_show_in_the_broker_metrics(cluster: InProcessCluster) -> None:
    broker = cluster.brokers[0]
    addr = broker.address
    async with (
        AdminClient(namesrv_addr=cluster.namesrv_addr) as admin,
        Producer("metrics_pg", namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        await admin.create_topic(TOPIC, queue_nums=2)
        # Queue 0: three small normal messages. Queue 1: one of 2000 bytes, one ordered
        # (a sharding key makes it "fifo").
        for i in range(3):
            await producer.send(
                Message(TOPIC, b"m%d" % i), queue=MessageQueue(TOPIC, "broker-a", 0)
            )
        await producer.send(Message(TOPIC, b"x" * 2000), queue=MessageQueue(TOPIC, "broker-a", 1))
        fifo = Message(TOPIC, b"ordered", properties={mc.PROPERTY_SHARDING_KEY: "order-1"})
        await producer.send(fifo, queue=MessageQueue(TOPIC, "broker-a", 1))
        assert await asyncio.to_thread(broker.message_store.wait_for_dispatch)
        await heartbeat(admin, addr)
        # The group pulls two of queue 0 and commits one: one in flight, one ready, two lag.
        pulled = await pull(admin, addr, 0, 2)
        assert len(pulled) == 2
        await admin.api.update_consumer_offset(
            addr, GROUP, MessageQueue(TOPIC, "broker-a", 0), 1, 3.0
        )

        # A producer registers with its heartbeat (periodic, 30 s): send one now.
        await producer.instance.send_heartbeat_to_all_brokers()
        samples = await scrape(broker.metrics_manager.exporter)

    normal = {**BROKER_LABELS, "topic": TOPIC, "message_type": "normal", "is_system": "false"}
    assert value(samples, "rocketmq_messages_in_total", **normal) == 4
    assert value(samples, "rocketmq_messages_in_total", message_type="fifo", topic=TOPIC) == 1
    # RocketMQ's buckets: 1 KiB, 4 KiB, ...; one sample per put, of its stored size.
    assert value(samples, "rocketmq_message_size_bucket", le="1024.0", **normal) == 3
    assert value(samples, "rocketmq_message_size_bucket", le="4096.0", **normal) == 4
    assert value(samples, "rocketmq_message_size_bucket", le="+Inf", **normal) == 4
    assert value(samples, "rocketmq_message_size_count", **normal) == 4
    stored = value(samples, "rocketmq_throughput_in_total", **normal)
    assert stored == value(samples, "rocketmq_message_size_sum", **normal)
    assert stored > 2000 + 3 * 2  # bodies plus each record's header and properties

    out = {**BROKER_LABELS, "topic": TOPIC, "consumer_group": GROUP, "is_system": "false"}
    assert value(samples, "rocketmq_messages_out_total", **out) == 2
    assert value(samples, "rocketmq_throughput_out_total", **out) == sum(
        m.store_size for m in pulled
    )

    lag = {**BROKER_LABELS, "consumer_group": GROUP, "topic": TOPIC, "is_retry": "false"}
    # Queue 0: 3 stored, 1 committed, 2 pulled; queue 1: never consumed (no offset: no lag).
    assert value(samples, "rocketmq_consumer_lag_messages", **lag) == 2
    assert value(samples, "rocketmq_consumer_inflight_messages", **lag) == 1
    assert value(samples, "rocketmq_consumer_ready_messages", **lag) == 1
    assert 0 <= value(samples, "rocketmq_consumer_lag_latency", **lag) < 60_000
    assert 0 <= value(samples, "rocketmq_consumer_queueing_latency", **lag) < 60_000

    connection = {
        **BROKER_LABELS,
        "protocol_type": "remoting",
        "language": "python",
        "version": "v4_9_8",
    }
    assert value(samples, "rocketmq_producer_connections", **connection) == 1
    assert (
        value(
            samples,
            "rocketmq_consumer_connections",
            consumer_group=GROUP,
            consume_mode="pull",
            is_system="false",
            **connection,
        )
        == 1
    )
    topics = broker.topic_config_manager.topic_names()
    assert value(samples, "rocketmq_topic_number", **BROKER_LABELS) == len(topics)
    groups = broker.subscription_group_manager.group_names()
    assert value(samples, "rocketmq_consumer_group_number", **BROKER_LABELS) == len(groups)
    storage = {**BROKER_LABELS, "storage_type": "local", "storage_medium": "disk"}
    assert value(samples, "rocketmq_storage_size", **storage) > 0
    assert value(samples, "rocketmq_storage_dispatch_behind_bytes", **storage) == 0
    assert value(samples, "rocketmq_storage_flush_behind_bytes", **storage) >= 0

    sends = [
        s
        for s in samples
        if s.name == "rocketmq_rpc_latency_count"
        and s.labels["request_code"] in ("send_message", "send_message_v2")
        and s.labels["response_code"] == "success"
    ]
    assert sum(s.value for s in sends) == 5
    assert all(s.labels["node_id"] == "broker-a" for s in sends)
    assert value(samples, "process_cpu_seconds_total") > 0


async def test_the_name_server_serves_its_request_latency(cluster: InProcessCluster) -> None:
    samples = await scrape(cluster.namesrv.metrics.exporter)
    node = {"node_type": "namesrv", "node_id": cluster.namesrv_addr, "env": "test"}
    registrations = value(
        samples,
        "rocketmq_rpc_latency_count",
        request_code="register_broker",
        response_code="success",
        **node,
    )
    assert registrations >= 1
    assert (
        value(
            samples,
            "rocketmq_rpc_latency_bucket",
            le="+Inf",
            request_code="register_broker",
            **node,
        )
        == registrations
    )
    assert value(samples, "rocketmq_namesrv_broker_number", **node) == 1
    assert value(samples, "rocketmq_topic_number", **node) >= 1


async def test_metrics_are_off_unless_asked_for(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path / "cluster") as plain:
        broker = plain.brokers[0]
        assert broker.metrics_manager.exporter is None
        # Nothing is counted on the hot paths either.
        assert broker.send_message_processor.message_counters is None
        assert broker.pull_message_processor.message_counters is None
        assert broker.remoting_server.table.rpc_latency is None
        assert plain.namesrv.metrics.exporter is None


async def test_stopping_the_broker_closes_its_metrics_port(cluster: InProcessCluster) -> None:
    broker = cluster.brokers[0]
    exporter = broker.metrics_manager.exporter
    assert exporter is not None
    url = exporter.url
    await cluster.stop_broker(broker)

    def get() -> None:
        urllib.request.urlopen(url, timeout=2)

    with pytest.raises(OSError):
        await asyncio.to_thread(get)


async def test_enable_remoting_metrics_false_leaves_out_the_rpc_latency(tmp_path: Path) -> None:
    settings = {**METRICS_ON, "enable_remoting_metrics": False}
    async with (
        InProcessCluster(tmp_path / "cluster", broker_settings=settings) as running,
        Producer("metrics_pg", namesrv_addr=running.namesrv_addr) as producer,
    ):
        broker = running.brokers[0]
        await producer.send(Message(TOPIC, b"one"))
        assert broker.remoting_server.table.rpc_latency is None
        samples = await scrape(broker.metrics_manager.exporter)
    assert not [s for s in samples if s.name.startswith("rocketmq_rpc_latency")]
    assert value(samples, "rocketmq_messages_in_total", topic=TOPIC) == 1
