"""``RpcLatencyRecorder``: RocketMQ 5's ``rocketmq_rpc_latency`` histogram (its
``RemotingMetricsManager``), counted by the ``ProcessorTable`` for every answered request
and read when a Prometheus scrape asks."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
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

_S1, _S3, _S5, _S7, _S10, _S100, _S1000, _S2000, _S3000 = (
    bound / 1000 for bound in RPC_LATENCY_BUCKETS_MS
)
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
    (request code, response code). ``record`` is the hot path: the loop's clock, a dict
    lookup (by request code alone for SUCCESS, most answers), a comparison or two and two
    adds; the families are built when scraped.

    Event-loop confined: ``record`` runs on the server's loop, and so must ``families``
    (the exporter calls it there)."""

    def __init__(self) -> None:
        self._success: dict[int, list[float]] = {}
        self._other: dict[tuple[int, int], list[float]] = {}
        self._clock: Callable[[], float] | None = None

    def record(self, request_code: int, response_code: int, admitted: float) -> None:
        """A request admitted at ``admitted`` (the loop's time) is answered now."""
        clock = self._clock
        if clock is None:
            clock = self._clock = asyncio.get_running_loop().time
        elapsed = clock() - admitted
        if response_code:
            cell = self._other.setdefault((request_code, response_code), [0.0] * (_SUM + 1))
        else:
            try:
                cell = self._success[request_code]
            except KeyError:
                cell = self._success[request_code] = [0.0] * (_SUM + 1)
        # Unrolled: most answers take under a millisecond or three.
        if elapsed <= _S1:
            cell[0] += 1
        elif elapsed <= _S3:
            cell[1] += 1
        elif elapsed <= _S5:
            cell[2] += 1
        elif elapsed <= _S7:
            cell[3] += 1
        elif elapsed <= _S10:
            cell[4] += 1
        elif elapsed <= _S100:
            cell[5] += 1
        elif elapsed <= _S1000:
            cell[6] += 1
        elif elapsed <= _S2000:
            cell[7] += 1
        elif elapsed <= _S3000:
            cell[8] += 1
        else:
            cell[9] += 1
        cell[_SUM] += elapsed

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
        bounds = [*(repr(b) for b in RPC_LATENCY_BUCKETS_MS), "+Inf"]
        cells = {(code, 0): cell for code, cell in self._success.items()}
        cells.update(self._other)
        for (request_code, response_code), cell in sorted(cells.items()):
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
