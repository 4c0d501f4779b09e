"""Bulk jobs on Spark over OrbitMQ topics (``orbitmq pipeline ...``): archive a topic to
Parquet, move a consumer group's backlog to a topic with more queues (R48), report a group's
lag. Each is a function taking a SparkSession, so it runs the same under ``local[*]`` and
under spark-submit on a cluster."""

from orbitmq.spark.jobs.archive import ArchiveSummary, archive
from orbitmq.spark.jobs.backlog import BacklogMove, rebalance_backlog
from orbitmq.spark.jobs.lag_report import QueueLag, lag_report, write_lag_report

__all__ = [
    "ArchiveSummary",
    "BacklogMove",
    "QueueLag",
    "archive",
    "lag_report",
    "rebalance_backlog",
    "write_lag_report",
]
