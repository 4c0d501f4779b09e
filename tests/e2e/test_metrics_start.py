"""``orbitmq start`` serves Prometheus metrics by default (issue 17 §3): a real process, its
``/metrics`` endpoints scraped over HTTP after a send and a pull."""

from __future__ import annotations

import asyncio
import re
import signal
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_cli import send_and_pull
from tests.eventually import eventually
from tests.support import start_orbitmq

METRICS_LINE = re.compile(r"Prometheus metrics: broker (\S+), name server (\S+)$")


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    found = [
        v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items()
    ]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_start_serves_metrics_on_both_servers(tmp_path: Path) -> None:
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "orbitmq")
    try:
        namesrv, broker = ready.group(1), ready.group(2)
        out = tmp_path / "orbitmq.out"

        def metrics_line() -> re.Match[str] | None:
            lines = out.read_text().splitlines()
            return next(filter(None, (METRICS_LINE.match(line) for line in lines)), None)

        match = eventually(metrics_line, 5, what="the metrics line")
        broker_url, namesrv_url = match.groups()
        asyncio.run(send_and_pull(namesrv, broker))

        samples = scrape(broker_url)
        node = {"cluster": "DefaultCluster", "node_type": "broker", "node_id": "broker-a"}
        assert sample(samples, "rocketmq_messages_in_total", topic="CliTopic", **node) == 1
        assert sample(samples, "rocketmq_messages_out_total", topic="CliTopic", **node) == 1
        assert sample(samples, "process_resident_memory_bytes") > 0
        registered = scrape(namesrv_url)
        assert (
            sample(
                registered,
                "rocketmq_rpc_latency_count",
                request_code="register_broker",
                node_type="namesrv",
            )
            >= 1
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0, (tmp_path / "orbitmq.err").read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
