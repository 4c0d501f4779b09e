"""``MetricsExporterType``: how a server exports its metrics (RocketMQ 5's
``metricsExporterType`` key, shared by broker.conf and namesrv.conf)."""

from __future__ import annotations

import enum


class MetricsExporterType(enum.Enum):
    """RocketMQ 5's values. Only DISABLE and PROM (a Prometheus text endpoint at
    ``/metrics``) are served; OTLP_GRPC and LOG are accepted so a RocketMQ 5 broker.conf
    loads, and export nothing (the server logs a warning)."""

    DISABLE = 0
    OTLP_GRPC = 1
    PROM = 2
    LOG = 3
