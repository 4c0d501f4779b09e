"""``orbitmq pipeline ...``: the jobs as commands, each with a progress bar while Spark works
and a summary table at the end. The session is ``local[*]`` unless ``--master`` names
another, or spark-submit launched this (``spark-submit .../orbitmq/spark/jobs/__main__.py
archive ...``): then the submitted master and settings apply unchanged."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click
from pyspark import SparkConf
from pyspark.sql import SparkSession
from rich.console import Console
from rich.table import Table

from orbitmq.spark.data_source import register
from orbitmq.spark.jobs.archive import archive
from orbitmq.spark.jobs.backlog import rebalance_backlog
from orbitmq.spark.jobs.lag_report import lag_report, write_lag_report
from orbitmq.spark.jobs.progress import SparkProgress

console = Console()

_namesrv = click.option(
    "-n",
    "--namesrv-addr",
    envvar="NAMESRV_ADDR",
    required=True,
    help="Name server address(es), host:port;host:port (default: $NAMESRV_ADDR).",
)
_master = click.option("--master", help="Spark master (default: spark-submit's, else local[*]).")


def session(app: str, master: str | None) -> SparkSession:
    """The job's SparkSession: the one spark-submit set up, else a local one."""
    submitted = SparkConf().contains("spark.master")
    builder = SparkSession.builder.appName(f"orbitmq pipeline {app}")
    if master is not None or not submitted:
        # Local workers must run this interpreter, the one with orbitmq installed.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.master(master or "local[*]")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")  # quiet the replaced-source warning below
    # Registered by name, Spark's own lookup would run the executors' Python workers on the
    # driver's interpreter path and PYTHONPATH, without the job's --py-files; registered here
    # they run PYSPARK_PYTHON (spark.pyspark.python) with the shipped files, as on a cluster
    # whose nodes have their own Python.
    register(spark)
    spark.sparkContext.setLogLevel("WARN")
    return spark


def _summary(title: str, rows: list[tuple[str, str]]) -> None:
    table = Table(title=title, show_header=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)


@click.group(name="pipeline", context_settings={"help_option_names": ["-h", "--help"]})
def pipeline() -> None:
    """Spark jobs over OrbitMQ topics: archive, rebalance-backlog, lag-report."""


@pipeline.command("archive")
@_namesrv
@_master
@click.option("--topic", required=True, help="The topic to archive.")
@click.option("--output", required=True, help="Parquet directory (any Spark path).")
@click.option("--checkpoint", required=True, help="Where the run's progress is kept.")
@click.option(
    "--partition-by",
    default="date",
    show_default=True,
    help="Comma-separated: date, topic, queue.",
)
@click.option("--max-offsets-per-trigger", type=int, help="Messages per micro-batch at most.")
@click.option("--consumer-group", help="Show the archive's progress under this group.")
def archive_command(
    namesrv_addr: str,
    master: str | None,
    topic: str,
    output: str,
    checkpoint: str,
    partition_by: str,
    max_offsets_per_trigger: int | None,
    consumer_group: str | None,
) -> None:
    """Archive TOPIC to Parquet: each run adds what arrived since the last one, once."""
    spark = session("archive", master)
    with SparkProgress(spark, f"archiving {topic}", console):
        summary = archive(
            spark,
            namesrv_addr=namesrv_addr,
            topic=topic,
            output=output,
            checkpoint=checkpoint,
            partition_by=[p.strip() for p in partition_by.split(",") if p.strip()],
            max_offsets_per_trigger=max_offsets_per_trigger,
            consumer_group=consumer_group,
        )
    _summary(
        f"archive of {topic}",
        [
            ("messages archived", f"{summary.rows:,}"),
            ("micro-batches", str(summary.batches)),
            ("output", summary.output),
        ],
    )


@pipeline.command("rebalance-backlog")
@_namesrv
@_master
@click.option("--topic", required=True, help="The topic with the backlog.")
@click.option("--group", required=True, help="The consumer group that is behind.")
@click.option("--factor", type=int, default=10, show_default=True, help="Queue multiplier.")
@click.option("--temp-topic", help="Default: <topic>_BACKLOG.")
@click.option("--force", is_flag=True, help="Run even with consumers of the group online.")
def rebalance_backlog_command(
    namesrv_addr: str,
    master: str | None,
    topic: str,
    group: str,
    factor: int,
    temp_topic: str | None,
    force: bool,
) -> None:
    """Move GROUP's backlog on TOPIC into a topic with FACTOR x the queues (SPEC R48)."""
    spark = session("rebalance-backlog", master)
    with SparkProgress(spark, f"moving the backlog of {group} on {topic}", console):
        move = rebalance_backlog(
            spark,
            namesrv_addr=namesrv_addr,
            topic=topic,
            group=group,
            factor=factor,
            temp_topic=temp_topic,
            force=force,
        )
    table = Table(title=f"backlog of {group}: {topic} -> {move.temp_topic}")
    for column in ("source queue", "offsets moved", "messages"):
        table.add_column(column, justify="left" if column == "source queue" else "right")
    for mq, (start, end) in sorted(move.ranges.items()):
        table.add_row(f"{mq.broker_name}:{mq.queue_id}", f"[{start}, {end})", f"{end - start:,}")
    console.print(table)
    busy = sum(1 for n in move.temp_queue_counts.values() if n)
    _summary(
        "moved",
        [
            ("messages", f"{move.moved:,}"),
            ("temporary queues", str(len(move.temp_queue_counts))),
            ("temporary queues that received messages", str(busy)),
            (
                "next",
                f"consume {move.temp_topic} with up to {len(move.temp_queue_counts)} consumers",
            ),
        ],
    )


@pipeline.command("lag-report")
@_namesrv
@_master
@click.option("--group", required=True, help="The consumer group.")
@click.option("--topic", help="Only this topic (default: every topic of the group).")
@click.option("--csv", "csv_path", type=click.Path(path_type=Path), help="Write a CSV file.")
@click.option("--parquet", type=click.Path(path_type=Path), help="Write a Parquet file.")
@click.option("--png", type=click.Path(path_type=Path), help="Write a bar chart of the lag.")
def lag_report_command(
    namesrv_addr: str,
    master: str | None,
    group: str,
    topic: str | None,
    csv_path: Path | None,
    parquet: Path | None,
    png: Path | None,
) -> None:
    """Show GROUP's committed offset, max offset, lag and oldest unconsumed message per queue."""
    spark = session("lag-report", master)
    with SparkProgress(spark, f"reading the lag of {group}", console):
        lags = lag_report(spark, namesrv_addr=namesrv_addr, group=group, topic=topic)
    table = Table(title=f"consumer group {group}")
    for column in ("topic", "queue", "committed", "max", "lag", "oldest unconsumed (UTC)"):
        table.add_column(column, justify="left" if column in ("topic", "queue") else "right")
    for q in lags:
        oldest = q.oldest_unconsumed.strftime("%Y-%m-%d %H:%M:%S") if q.oldest_unconsumed else "-"
        table.add_row(
            q.topic,
            f"{q.broker_name}:{q.queue_id}",
            f"{q.committed_offset:,}",
            f"{q.max_offset:,}",
            f"{q.lag:,}",
            oldest,
        )
    console.print(table)
    write_lag_report(lags, group=group, csv=csv_path, parquet=parquet, png=png)
    written = [str(p) for p in (csv_path, parquet, png) if p is not None]
    _summary(
        "lag",
        [("queues", str(len(lags))), ("total lag", f"{sum(q.lag for q in lags):,}")]
        + [("written", ", ".join(written))] * bool(written),
    )
