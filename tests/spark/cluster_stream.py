"""A Spark driver for the standalone-cluster tests: reads a topic as a stream
(``Trigger.AvailableNow``, a few offsets per micro-batch) into Parquet and exits. Standalone
(it imports nothing from tests/) so that spark-submit can run it with a bare interpreter.

    python cluster_stream.py NAMESRV TOPIC OUT CHECKPOINT [MASTER]   (package installed)
    spark-submit --master M --py-files orbitmq.zip cluster_stream.py NAMESRV TOPIC OUT CKPT
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession


def main(namesrv_addr: str, topic: str, out: str, checkpoint: str, *master: str) -> None:
    builder = (
        SparkSession.builder.appName("orbitmq cluster stream")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executor.memory", "512m")
        .config("spark.sql.shuffle.partitions", "2")
    )
    if master:
        builder = builder.master(master[0])
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if not master:
        # Under spark-submit with --py-files: register the source so that the executors run
        # PYSPARK_PYTHON with the shipped files (Spark's lookup by name would not).
        from orbitmq.spark import register  # noqa: PLC0415 - found in the shipped zip

        register(spark)
    query = (
        spark.readStream.format("orbitmq")
        .option("namesrvAddr", namesrv_addr)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40")
        .load()
        .writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    print(f"batches {len(query.recentProgress)}", flush=True)
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:])
