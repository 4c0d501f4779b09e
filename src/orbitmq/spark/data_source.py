"""The ``orbitmq`` data source: Spark finds it by name (``pyspark_orbitmq.DefaultSource``) or
through ``register(spark)``; its readers and writers do the work."""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from orbitmq.spark.batch_reader import OrbitMQBatchReader
from orbitmq.spark.message_writer import check_sink_schema
from orbitmq.spark.options import OptionError, SinkOptions, SourceOptions
from orbitmq.spark.schema import SOURCE_SCHEMA
from orbitmq.spark.stream_reader import OrbitMQStreamReader
from orbitmq.spark.writers import OrbitMQBatchWriter, OrbitMQStreamWriter


def _check_schema(schema: StructType) -> None:
    if schema != SOURCE_SCHEMA:
        raise OptionError(
            "the orbitmq source has a fixed schema and cannot take a user-specified one: "
            f"drop .schema(...) (its schema is {SOURCE_SCHEMA.simpleString()})"
        )


def _check_append(overwrite: bool) -> None:
    if overwrite:
        raise OptionError(
            "the orbitmq sink only appends (a topic's messages cannot be replaced): use"
            ' mode("append")'
        )


class OrbitMQDataSource(DataSource):
    """Owns the options of one ``format("orbitmq")`` read or write and builds the matching
    reader or writer. Instances are pickled to Spark's Python workers."""

    @classmethod
    def name(cls) -> str:
        return "orbitmq"

    def schema(self) -> StructType:
        return SOURCE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        _check_schema(schema)
        return OrbitMQBatchReader(SourceOptions.parse(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        _check_schema(schema)
        return OrbitMQStreamReader(SourceOptions.parse(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        _check_append(overwrite)
        options = SinkOptions.parse(self.options)
        check_sink_schema(schema, options)
        return OrbitMQBatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        _check_append(overwrite)
        options = SinkOptions.parse(self.options)
        check_sink_schema(schema, options)
        return OrbitMQStreamWriter(options)


def register(spark: SparkSession) -> None:
    """Make ``format("orbitmq")`` available in ``spark`` (needed only where Spark's lookup of
    ``pyspark_*`` modules does not run, e.g. a session created before the install)."""
    spark.dataSource.register(OrbitMQDataSource)
