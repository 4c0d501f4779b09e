"""docs/grafana/orbitmq.json queries only metrics the broker exports, under their names."""

from __future__ import annotations

import json
import re

from orbitmq.broker.metrics import broker_metrics_constant
from orbitmq.remoting.rpc_metrics import HISTOGRAM_RPC_LATENCY
from tests.support import REPO_ROOT

DASHBOARD = REPO_ROOT / "docs" / "grafana" / "orbitmq.json"


def test_every_dashboard_query_names_an_exported_metric() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {
        re.sub(r"_(bucket|count|sum)$", "", name)
        for expr in exprs
        for name in re.findall(r"\brocketmq_\w+", expr)
    }
    exported = {
        value
        for name, value in vars(broker_metrics_constant).items()
        if name.isupper() and isinstance(value, str) and value.startswith("rocketmq_")
    }
    exported.add(HISTOGRAM_RPC_LATENCY)
    assert used, "the dashboard queries nothing"
    assert used <= exported, used - exported
