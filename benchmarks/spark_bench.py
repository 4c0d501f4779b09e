"""Rows per second through the orbitmq Spark source and sink, beside the ceiling of Spark's
Python data sources on this machine.

In one run, against one broker (``orbitmq start`` in a subprocess, on a fresh data
directory, configured as docs/spark.md advises for bulk reads: a pull may return
``--pull-messages`` messages (2048) and ``--pull-bytes`` (4 MiB), where RocketMQ's defaults
are 32 and 256 KiB; the source asks for as many):

- fill: ``-n`` messages of ``--size`` bytes sent to ``--queues`` queues by the Python client
  (not Spark; the time is shown for reference);
- ceiling: Spark reading the same number of rows, same schema, from a Python data source that
  yields prebuilt Arrow batches from memory, into the ``noop`` sink;
- batch read: ``spark.read.format("orbitmq")`` of the whole topic into ``noop``;
- stream read: ``readStream`` with ``Trigger.AvailableNow`` into ``noop``, timed whole (the
  query's start and stop included) and by Spark's own processedRowsPerSecond of its one
  micro-batch;
- write: ``-n`` rows of ``--size`` bytes from ``spark.range`` written with
  ``df.write.format("orbitmq")`` to a second topic;
- write exactlyOnce: ``--exactly-once-rows`` rows the same way with ``exactlyOnce=true``
  (each batch of rows staged as one half message, then committed by the driver).

The phases run ``--rounds`` times in a row, in one Spark session. The first round runs on a
cold JVM (its JIT compiles Spark's row code as the round goes, which costs the ceiling as
much as the sources); the table shows the first round and the last one, a warm JVM, which
is what a pipeline that runs for a while sees.

Spark runs ``local[*]`` (every core), Java from the machine.

    .venv/bin/python benchmarks/spark_bench.py [-n 1000000] [--size 1024] [--queues 8]
        [--exactly-once-rows 100000] [--rounds 2] [--pull-messages 2048]
        [--pull-bytes 4194304] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from rich.console import Console
from rich.table import Table

from orbitmq.client import AdminClient, Producer
from orbitmq.common import Message, MessageQueue
from orbitmq.spark import ARROW_SCHEMA, SOURCE_SCHEMA

SOURCE_TOPIC = "SparkBenchSource"
SINK_TOPIC = "SparkBenchSink"
#: A small topic read first, so that every timed phase finds the Python workers started and
#: orbitmq imported in them (a one-off few seconds per session, not a per-row cost).
WARMUP_TOPIC = "SparkBenchWarmup"
CEILING = "ceiling: Python source over memory"
STREAM = "stream read (availableNow), whole query"
MICRO_BATCH = "stream read, its micro-batch (Spark's processedRowsPerSecond)"
EXACTLY_ONCE = "write exactlyOnce"
#: Rows per batch of the in-memory source: about what the orbitmq source yields for 1 KiB
#: messages (it decodes pull answers in runs of 2 MiB).
MEMORY_BATCH = 2048


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """A name server and a broker (``orbitmq start``) in a subprocess."""

    def __init__(self, root: Path, pull_messages: int = 512, pull_bytes: int = 1 << 20) -> None:
        self.namesrv_port, self.broker_port = free_port(), free_port()
        conf = root / "broker.conf"
        limits = "".join(
            f"maxTransferCountOnMessage{where}={pull_messages}\n"
            f"maxTransferBytesOnMessage{where}={pull_bytes}\n"
            for where in ("InMemory", "InDisk")
        )
        conf.write_text(
            "brokerClusterName=DefaultCluster\nbrokerName=broker-a\nbrokerId=0\n"
            f"brokerIP1=127.0.0.1\nconsolePort=-1\n{limits}"
        )
        argv = [sys.executable, "-m", "orbitmq.cli", "--log-level", "WARNING", "start"]
        argv += ["-c", str(conf), "--data-dir", str(root / "store")]
        argv += ["--namesrv-port", str(self.namesrv_port), "--listen-port", str(self.broker_port)]
        self.log = root / "broker.log"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while "OrbitMQ ready" not in self.log.read_text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the broker did not start:\n{self.log.read_text()}")
            time.sleep(0.1)

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv_port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


async def fill(namesrv_addr: str, n: int, size: int, queues: int) -> float:
    """Send ``n`` messages, 500 per request, spread over the queues; returns seconds."""
    async with AdminClient(namesrv_addr=namesrv_addr) as admin:
        await admin.create_topic(SOURCE_TOPIC, queue_nums=queues)
        await admin.create_topic(SINK_TOPIC, queue_nums=queues)
        await admin.create_topic(WARMUP_TOPIC, queue_nums=queues)
    body = b"x" * size
    began = time.perf_counter()
    async with Producer("spark-bench-fill", namesrv_addr=namesrv_addr) as producer:
        per_request = 500
        sem = asyncio.Semaphore(4)

        async def send(i: int) -> None:
            async with sem:
                mq = MessageQueue(SOURCE_TOPIC, "broker-a", i % queues)
                count = min(per_request, n - i * per_request)
                await producer.send([Message(SOURCE_TOPIC, body) for _ in range(count)], queue=mq)

        await asyncio.gather(*(send(i) for i in range((n + per_request - 1) // per_request)))
        for i in range(queues):
            mq = MessageQueue(WARMUP_TOPIC, "broker-a", i)
            await producer.send([Message(WARMUP_TOPIC, body) for _ in range(100)], queue=mq)
    async with AdminClient(namesrv_addr=namesrv_addr) as admin:
        deadline = time.monotonic() + 120
        while sum(q.max_offset - q.min_offset for q in await admin.topic_status(SOURCE_TOPIC)) < n:
            if time.monotonic() > deadline:
                raise RuntimeError("the consume queues never reached the filled count")
            await asyncio.sleep(0.1)
    return time.perf_counter() - began


class MemoryReader(DataSourceReader):
    """Yields one prebuilt batch again and again: Spark's cost of a Python source alone."""

    def __init__(self, rows: int, partitions: int, size: int) -> None:
        self.rows, self.parts, self.size = rows, partitions, size

    def partitions(self) -> list[InputPartition]:
        return [InputPartition(i) for i in range(self.parts)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        n = MEMORY_BATCH
        ms = pa.array([1_700_000_000_000_000] * n, pa.int64()).cast(ARROW_SCHEMA.field(10).type)
        columns = [
            pa.array([SOURCE_TOPIC] * n),
            pa.array(["broker-a"] * n),
            pa.array([partition.value] * n, pa.int32()),
            pa.array(range(n), pa.int64()),
            pa.array([f"{i:032X}" for i in range(n)]),
            pa.array([None] * n, pa.string()),
            pa.array([[] for _ in range(n)], ARROW_SCHEMA.field("keys").type),
            pa.array([[("UNIQ_KEY", f"{i:032X}")] for i in range(n)], ARROW_SCHEMA.field(7).type),
            pa.array([b"x" * self.size] * n, pa.binary()),
            ms,
            ms,
            pa.array([0] * n, pa.int32()),
        ]
        batch = pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
        share = self.rows // self.parts + (1 if partition.value < self.rows % self.parts else 0)
        for start in range(0, share, n):
            yield batch if start + n <= share else batch.slice(0, share - start)


class MemorySource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "orbitmq_bench_memory"

    def schema(self) -> Any:
        return SOURCE_SCHEMA

    def reader(self, schema: Any) -> DataSourceReader:
        o = self.options
        return MemoryReader(int(o["rows"]), int(o["partitions"]), int(o["size"]))


def timed(action: Any) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=1_000_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--queues", type=int, default=8)
    ap.add_argument("--exactly-once-rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--pull-messages", type=int, default=2048)
    ap.add_argument("--pull-bytes", type=int, default=4 << 20)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    os.environ.update(
        SPARK_LOCAL_IP="127.0.0.1",
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    console = Console()
    results: dict[str, Any] = {
        "n": args.n,
        "pull_messages": args.pull_messages,
        "pull_bytes": args.pull_bytes,
        "size": args.size,
        "queues": args.queues,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}",
    }
    with tempfile.TemporaryDirectory(prefix="spark-bench-") as tmp:
        root = Path(tmp)
        broker = Broker(root, args.pull_messages, args.pull_bytes)
        try:
            fill_s = asyncio.run(fill(broker.namesrv_addr, args.n, args.size, args.queues))
            spark = (
                SparkSession.builder.master("local[*]")
                .appName("orbitmq-spark-bench")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.memory", "2g")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            spark.dataSource.register(MemorySource)

            def orbitmq_topic(topic: str) -> Any:
                reader = spark.read.format("orbitmq").option("namesrvAddr", broker.namesrv_addr)
                reader = reader.option("pullBatchSize", str(args.pull_messages))
                return reader.option("topic", topic).load()

            def memory_rows(rows: int) -> Any:
                # A new reader each time: DataFrameReader.options changes the reader itself.
                reader = spark.read.format("orbitmq_bench_memory")
                return reader.options(
                    rows=str(rows), partitions=str(args.queues), size=str(args.size)
                ).load()

            def to_noop(df: Any) -> None:
                df.write.format("noop").mode("overwrite").save()

            to_noop(memory_rows(1000))  # warm-ups: see WARMUP_TOPIC
            to_noop(orbitmq_topic(WARMUP_TOPIC))

            def stream(checkpoint: Path) -> float:
                """The query's whole run; returns Spark's own rate of its micro-batch."""
                query = (
                    spark.readStream.format("orbitmq")
                    .option("namesrvAddr", broker.namesrv_addr)
                    .option("topic", SOURCE_TOPIC)
                    .option("startingOffsets", "earliest")
                    .option("pullBatchSize", str(args.pull_messages))
                    .load()
                    .writeStream.format("noop")
                    .option("checkpointLocation", str(checkpoint))
                    .trigger(availableNow=True)
                    .start()
                )
                query.awaitTermination()
                return float(query.lastProgress["processedRowsPerSecond"])

            body = f"unhex(repeat('78', {args.size})) AS body"

            def write(rows: int, **options: str) -> None:
                writer = spark.range(rows, numPartitions=args.queues).selectExpr(body).write
                writer = writer.format("orbitmq").option("namesrvAddr", broker.namesrv_addr)
                writer.option("topic", SINK_TOPIC).options(**options).mode("append").save()

            rounds: list[dict[str, float]] = []
            for number in range(args.rounds):
                timings: dict[str, float] = {}
                timings[CEILING] = timed(lambda: to_noop(memory_rows(args.n)))
                timings["batch read"] = timed(lambda: to_noop(orbitmq_topic(SOURCE_TOPIC)))
                checkpoint = root / f"checkpoint-{number}"
                began = time.perf_counter()
                micro_batch_rate = stream(checkpoint)
                timings[STREAM] = time.perf_counter() - began
                # Spark's processedRowsPerSecond: the micro-batch alone, without the query's
                # start and stop (about a second, whatever the rows).
                timings[MICRO_BATCH] = args.n / micro_batch_rate
                timings["write"] = timed(lambda: write(args.n))
                timings[EXACTLY_ONCE] = timed(
                    lambda: write(args.exactly_once_rows, exactlyOnce="true")
                )
                rounds.append(timings)
            spark.stop()
        finally:
            broker.stop()

    def rows(phase: str) -> int:
        return int(args.exactly_once_rows if phase == EXACTLY_ONCE else args.n)

    table = Table(title=f"orbitmq on Spark: {args.n:,} rows of {args.size} B, {results['machine']}")
    for column in ("phase", "first round (cold JVM) rows/s", "last round (warm) rows/s"):
        table.add_column(column, justify="right" if column != "phase" else "left")
    table.add_row("fill (Python client)", f"{args.n / fill_s:,.0f}", "")
    results["fill_rows_per_s"] = round(args.n / fill_s)
    results["rounds"] = []
    for timings in rounds:
        results["rounds"].append(
            {
                phase: {"seconds": round(seconds, 2), "rows_per_s": round(rows(phase) / seconds)}
                for phase, seconds in timings.items()
            }
        )
    for phase in rounds[0]:
        first, last = (results["rounds"][i][phase]["rows_per_s"] for i in (0, -1))
        table.add_row(phase, f"{first:,}", f"{last:,}")
    console.print(table)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
