"""The hot-path counters and the label helpers of the broker's metrics."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.broker.metrics import MessageCounters
from orbitmq.broker.metrics.broker_metrics_collector import version_desc
from orbitmq.common import message_const as mc
from orbitmq.common.topic_message_type import metrics_message_type_of
from orbitmq.remoting import node_labels
from orbitmq.remoting.rpc_metrics import RpcLatencyRecorder


@pytest.mark.parametrize(
    ("properties", "expected"),
    [
        ({mc.PROPERTY_TAGS: "a"}, "normal"),
        ({mc.PROPERTY_TRANSACTION_PREPARED: "true"}, "transaction"),
        ({mc.PROPERTY_TRANSACTION_PREPARED: "false"}, "normal"),
        ({mc.PROPERTY_SHARDING_KEY: "k"}, "fifo"),
        ({mc.PROPERTY_DELAY_TIME_LEVEL: "3"}, "delay"),
        ({mc.PROPERTY_TIMER_DELIVER_MS: "1"}, "delay"),
        ({"__STARTDELIVERTIME": "1"}, "delay"),
        # The metrics' own order: a message group wins over a delay.
        ({mc.PROPERTY_SHARDING_KEY: "k", mc.PROPERTY_DELAY_TIME_LEVEL: "3"}, "fifo"),
    ],
)
def test_message_type_as_rocketmq_5_tells_them(properties: dict[str, str], expected: str) -> None:
    assert metrics_message_type_of(properties).metrics_value == expected


def test_record_in_counts_messages_bytes_and_one_size_sample_per_put() -> None:
    counters = MessageCounters()
    counters.record_in("T", {}, 1, 500)
    counters.record_in("T", {}, 1, 3000)
    counters.record_in("T", {}, 4, 4 * 600_000)  # a batch: one sample of its mean size
    counters.record_in("T", {mc.PROPERTY_SHARDING_KEY: "k"}, 1, 10)
    totals = {(topic, kind): t for topic, kind, t in counters.incoming()}
    assert list(totals) == [("T", "fifo"), ("T", "normal")]
    normal = totals[("T", "normal")]
    assert (normal.messages, normal.stored_bytes) == (6, 500 + 3000 + 2_400_000)
    # Buckets 1 KiB, 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB, +Inf (not cumulative here).
    assert normal.buckets == [1, 1, 0, 1, 0, 0, 0]
    assert normal.size_sum == 500 + 3000 + 600_000
    fifo = totals[("T", "fifo")]
    assert (fifo.messages, fifo.stored_bytes, fifo.size_sum) == (1, 10, 10)


def test_record_out_counts_and_keeps_the_pull_offset() -> None:
    counters = MessageCounters()
    assert counters.pull_offset("g", "T", 0) == -1
    counters.record_out("T", "g", 0, 3, 300, 3)
    counters.record_out("T", "g", 0, 2, 200, 5)
    assert counters.outgoing[("T", "g")] == [5, 500]
    assert counters.pull_offset("g", "T", 0) == 5


async def test_rpc_latency_buckets_are_rocketmqs_in_milliseconds() -> None:
    recorder = RpcLatencyRecorder()
    now = asyncio.get_running_loop().time()
    for elapsed_s in (0.0005, 0.002, 0.05, 5.0):
        recorder.record(10, 0, now - elapsed_s)  # admitted that long ago
    recorder.record(10, 2, now)
    (family,) = recorder.families({"node_type": "broker"})
    samples = {
        s.labels["le"]: s.value
        for s in family.samples
        if s.name.endswith("_bucket") and s.labels["response_code"] == "success"
    }
    assert samples == {
        "1.0": 1,
        "3.0": 2,
        "5.0": 2,
        "7.0": 2,
        "10.0": 2,
        "100.0": 3,
        "1000.0": 3,
        "2000.0": 3,
        "3000.0": 3,
        "+Inf": 4,
    }
    sums = [s for s in family.samples if s.name.endswith("_sum")]
    assert sums[0].value == pytest.approx(5052.5, abs=5)
    assert [s.labels["response_code"] for s in sums] == ["success", "system_busy"]
    assert family.samples[0].labels["request_code"] == "send_message"


@pytest.mark.parametrize(
    ("version", "desc"),
    [(409, "v4_9_8"), (408, "v4_9_8_snapshot"), (212, "v4_0_0_snapshot"), (613, "higher_version")],
)
def test_version_labels_are_rocketmqs_version_names(version: int, desc: str) -> None:
    assert version_desc(version) == desc


def test_metrics_label_pairs_come_first_and_malformed_ones_are_skipped() -> None:
    labels = node_labels("broker", "broker-a", "env:prod,bad,dc:eu", cluster="C")
    assert labels == {
        "env": "prod",
        "dc": "eu",
        "node_type": "broker",
        "cluster": "C",
        "node_id": "broker-a",
    }
