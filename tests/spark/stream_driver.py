"""A Spark driver in its own process, for the kill -9 test: streams a topic into a Parquet
directory with a checkpoint, ``maxOffsetsPerTrigger`` at a time, until killed.

    python -m tests.spark.stream_driver NAMESRV TOPIC OUT_DIR CHECKPOINT_DIR MAX_OFFSETS
"""

from __future__ import annotations

import sys

from tests.spark.conftest import new_session


def main(namesrv_addr: str, topic: str, out: str, checkpoint: str, max_offsets: str) -> None:
    spark = new_session("orbitmq-stream-driver")
    stream = (
        spark.readStream.format("orbitmq")
        .option("namesrvAddr", namesrv_addr)
        .option("topic", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", max_offsets)
        .load()
    )
    query = (
        stream.writeStream.format("parquet")
        .option("path", out)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="0 seconds")
        .start()
    )
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main(*sys.argv[1:])
