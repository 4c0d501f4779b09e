"""The rows the OrbitMQ source yields: one per message, with the queue it came from.

``SOURCE_SCHEMA`` is the Spark schema; ``ARROW_SCHEMA`` is the Arrow schema Spark expects for
it (``to_arrow_schema`` with UTC timestamps, as Spark's Python data source worker computes
it), so the batches ``arrow_records`` builds pass Spark's schema check as they are.
"""

from __future__ import annotations

from typing import Any, Final

from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SOURCE_SCHEMA: Final = StructType(
    [
        StructField("topic", StringType(), nullable=False),
        StructField("brokerName", StringType(), nullable=False),
        StructField("queueId", IntegerType(), nullable=False),
        StructField("queueOffset", LongType(), nullable=False),
        #: The message id a RocketMQ consumer sees: the producer's UNIQ_KEY when it set
        #: one, else the offset message id (store host + commit log offset).
        StructField("msgId", StringType(), nullable=False),
        StructField("tags", StringType(), nullable=True),
        StructField("keys", ArrayType(StringType(), containsNull=False), nullable=False),
        StructField(
            "properties", MapType(StringType(), StringType(), valueContainsNull=False), False
        ),
        StructField("body", BinaryType(), nullable=False),
        StructField("bornTimestamp", TimestampType(), nullable=False),
        StructField("storeTimestamp", TimestampType(), nullable=False),
        StructField("reconsumeTimes", IntegerType(), nullable=False),
    ]
)

ARROW_SCHEMA: Final[Any] = to_arrow_schema(SOURCE_SCHEMA, timezone="UTC")
