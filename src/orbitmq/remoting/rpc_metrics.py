"""``RpcLatencyRecorder``: RocketMQ 5's ``rocketmq_rpc_latency`` histogram (its
``RemotingMetricsManager``), counted by the ``ProcessorTable`` for every answered request
and read when a Prometheus scrape asks."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import Final

from prometheus_client.metrics_core import HistogramMetricFamily

from orbitmq.protocol import RequestCode, ResponseCode

HISTOGRAM_RPC_LATENCY: Final = "rocketmq_rpc_latency"
LABEL_PROTOCOL_TYPE: Final = "protocol_type"
LABEL_REQUEST_CODE: Final = "request_code"
LABEL_RESPONSE_CODE: Final = "response_code"
LABEL_IS_LONG_POLLING: Final = "is_long_polling"
LABEL_RESULT: Final = "result"
PROTOCOL_TYPE_REMOTING: Final = "remoting"
RESULT_SUCCESS: Final = "success"
#: RocketMQ's rpc latency buckets, in ms (RemotingMetricsManager.getMetricsView).
RPC_LATENCY_BUCKETS_MS: Final = (1.0, 3.0, 5.0, 7.0, 10.0, 100.0, 1000.0, 2000.0, 3000.0)

#: The same bounds in seconds, the unit the loop's clock counts in.
_BUCKETS_S: Final = tuple(bound / 1000 for bound in RPC_LATENCY_BUCKETS_MS)
#: One histogram cell: a count per bucket (the last one +Inf), then the sum in seconds.
_SUM: Final = len(RPC_LATENCY_BUCKETS_MS) + 1


def code_label(code: int, names: type[RequestCode] | type[ResponseCode]) -> str:
    """A code as RocketMQ labels it: its constant's name in lower case (the number when
    OrbitMQ has no name for it)."""
    try:
        return names(code).name.lower()
    except ValueError:
        return str(code)


class RpcLatencyRecorder:
    """Owns the latency histogram of one server's answered requests, one cell per
    (request code, response code). ``record`` is the hot path: a dict lookup, a bisect
    and two int/float adds; the families are built when scraped.

    Event-loop confined: ``record`` runs on the server's loop, and so must ``families``
    (the exporter calls it there)."""

    def __init__(self) -> None:
        self._cells: dict[tuple[int, int], list[float]] = {}

    def record(self, request_code: int, response_code: int, elapsed_s: float) -> None:
        key = (request_code, response_code)
        try:
            cell = self._cells[key]
        except KeyError:
            cell = self._cells[key] = [0.0] * (_SUM + 1)
        cell[bisect_left(_BUCKETS_S, elapsed_s)] += 1
        cell[_SUM] += elapsed_s

    def families(self, base_labels: Mapping[str, str]) -> list[HistogramMetricFamily]:
        """``rocketmq_rpc_latency`` with RocketMQ's labels, cumulative buckets in ms."""
        keys = [
            *base_labels,
            LABEL_PROTOCOL_TYPE,
            LABEL_REQUEST_CODE,
            LABEL_RESPONSE_CODE,
            LABEL_IS_LONG_POLLING,
            LABEL_RESULT,
        ]
        family = HistogramMetricFamily(
            HISTOGRAM_RPC_LATENCY, "Rpc latency (milliseconds)", labels=keys
        )
        bounds = [*(repr(float(b)) for b in RPC_LATENCY_BUCKETS_MS), "+Inf"]
        for (request_code, response_code), cell in sorted(self._cells.items()):
            running = 0.0
            buckets: list[tuple[str, float]] = []
            for bound, count in zip(bounds, cell[:_SUM], strict=True):
                running += count
                buckets.append((bound, running))
            values = [
                *base_labels.values(),
                PROTOCOL_TYPE_REMOTING,
                code_label(request_code, RequestCode),
                code_label(response_code, ResponseCode),
                "false",
                RESULT_SUCCESS,
            ]
            family.add_metric(values, buckets, cell[_SUM] * 1000)
        return [family]
