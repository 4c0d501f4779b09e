"""Spark's name-based lookup of Python data sources imports every ``pyspark_*`` module and
registers its ``DefaultSource``: with OrbitMQ installed, ``format("orbitmq")`` just works."""

from orbitmq.spark import OrbitMQDataSource as DefaultSource
from orbitmq.spark import register

__all__ = ["DefaultSource", "register"]
