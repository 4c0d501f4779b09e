"""OrbitMQ topics in Apache Spark through PySpark's Python Data Source API.

``spark.read.format("orbitmq")`` and ``spark.readStream.format("orbitmq")`` read topics as
rows of ``SOURCE_SCHEMA``; see docs/spark.md for the options and guarantees. Needs the
``orbitmq[spark]`` extra (pyspark, pyarrow, pandas).
"""

from orbitmq.spark.data_source import OrbitMQDataSource, register
from orbitmq.spark.offset_ranges import DataLossError, QueueRange
from orbitmq.spark.options import OptionError, SourceOptions
from orbitmq.spark.schema import ARROW_SCHEMA, SOURCE_SCHEMA

__all__ = [
    "ARROW_SCHEMA",
    "SOURCE_SCHEMA",
    "DataLossError",
    "OptionError",
    "OrbitMQDataSource",
    "QueueRange",
    "SourceOptions",
    "register",
]
