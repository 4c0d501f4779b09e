"""The rows the OrbitMQ source yields: one per message, with the queue it came from.

``SOURCE_SCHEMA`` is the Spark schema; ``ARROW_SCHEMA`` is the Arrow schema Spark expects for
it (``to_arrow_schema`` with UTC timestamps, as Spark's Python data source worker computes
it), so batches built here pass Spark's schema check as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa
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

from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc

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

_STRING: Final = pa.string()
_INT32: Final = pa.int32()
_INT64: Final = pa.int64()
_KEYS: Final = ARROW_SCHEMA.field("keys").type
_PROPERTIES: Final = ARROW_SCHEMA.field("properties").type
_TIMESTAMP: Final = ARROW_SCHEMA.field("storeTimestamp").type
_KEYS_KEY: Final = mc.PROPERTY_KEYS
_TAGS_KEY: Final = mc.PROPERTY_TAGS
_UNIQ_KEY: Final = mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX


def to_record_batch(
    topic: str, broker_name: str, queue_id: int, messages: Sequence[MessageExt]
) -> Any:
    """One Arrow record batch of ``messages``, all read from queue ``queue_id`` of ``topic``
    on ``broker_name``."""
    n = len(messages)
    # One pass per column: each a list comprehension, the cheapest Python loop there is.
    properties = [m.properties for m in messages]
    keys = [p[_KEYS_KEY].split() if _KEYS_KEY in p else [] for p in properties]
    columns = [
        pa.array([topic] * n, _STRING),
        pa.array([broker_name] * n, _STRING),
        pa.array([queue_id] * n, _INT32),
        pa.array([m.queue_offset for m in messages], _INT64),
        pa.array(
            [p.get(_UNIQ_KEY) or m.msg_id for m, p in zip(messages, properties, strict=True)],
            _STRING,
        ),
        pa.array([p.get(_TAGS_KEY) for p in properties], _STRING),
        pa.array(keys, _KEYS),
        pa.array([list(p.items()) for p in properties], _PROPERTIES),
        pa.array([m.body for m in messages], pa.binary()),
        pa.array([m.born_timestamp * 1000 for m in messages], _INT64).cast(_TIMESTAMP),
        pa.array([m.store_timestamp * 1000 for m in messages], _INT64).cast(_TIMESTAMP),
        pa.array([m.reconsume_times for m in messages], _INT32),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
