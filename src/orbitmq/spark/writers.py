"""``df.write.format("orbitmq")`` and ``df.writeStream.format("orbitmq")``: Arrow writers
whose tasks send through ``MessageWriter``.

By default delivery is at least once: a task that fails after some sends is run again and
sends its rows again, with the same message ids (see ``message_writer``). With
``exactlyOnce=true`` the tasks stage half messages and the driver's commit makes them visible
(``staged_commit``); an aborted write's halves are rolled back.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from orbitmq.client import MQClientError
from orbitmq.spark import staged_commit
from orbitmq.spark.message_writer import MessageWriter, WriteSummary
from orbitmq.spark.options import SinkOptions
from orbitmq.spark.staged_batch import stage_name

log = logging.getLogger(__name__)

#: Local properties Spark gives the tasks of a micro-batch: the query's id (kept in the
#: checkpoint, so the same across restarts) and the batch's.
_QUERY_ID = "sql.streaming.queryId"
_BATCH_ID = "streaming.sql.batchId"


def _partition() -> int:
    context = TaskContext.get()
    return context.partitionId() if context is not None else 0


def _stage(messages: Sequence[WriterCommitMessage | None], batch_id: int) -> str | None:
    """A micro-batch's name for its commit intent: the query's id (the tasks had it from
    Spark; it survives restarts) and the batch id. None for a batch without tasks: it
    staged nothing."""
    query_ids = {m.write_id for m in messages if isinstance(m, WriteSummary)}
    if not query_ids:
        return None
    if len(query_ids) > 1:
        raise MQClientError(f"batch {batch_id}: the tasks name {len(query_ids)} queries")
    return stage_name(query_ids.pop(), batch_id)


def _total(messages: Sequence[WriterCommitMessage | None]) -> int:
    return sum(m.messages for m in messages if isinstance(m, WriteSummary))


class OrbitMQBatchWriter(DataSourceArrowWriter):
    """Owns one batch write's options and its write id (made on the driver, so a retried
    task gives its rows the same ids)."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options
        self.write_id = uuid.uuid4().hex

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        writer = MessageWriter(self.options, self.write_id, 0, _partition())
        return writer.write(iterator)

    @property
    def _stage(self) -> str:
        """The write's one stage (its tasks' batch id is 0)."""
        return stage_name(self.write_id, 0)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            staged = staged_commit.staged_of(messages)
            staged_commit.commit(self.options, staged, self._stage, replayable=False)
        log.info("orbitmq sink: write %s stored %d messages", self.write_id, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            staged = staged_commit.staged_of(messages)
            staged_commit.roll_back(self.options, staged, self._stage, replayable=False)
        log.warning(
            "orbitmq sink: write %s failed after storing %d messages (at least once: a new"
            " run sends them again)",
            self.write_id,
            _total(messages),
        )


class OrbitMQStreamWriter(DataSourceStreamArrowWriter):
    """Owns one streaming query's sink options; ids come from the query id and batch id
    that Spark gives each task."""

    def __init__(self, options: SinkOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        context = TaskContext.get()
        query_id = context.getLocalProperty(_QUERY_ID) if context is not None else None
        batch_id = context.getLocalProperty(_BATCH_ID) if context is not None else None
        if query_id is None or batch_id is None:
            raise MQClientError("the orbitmq stream sink runs only in a streaming query's tasks")
        writer = MessageWriter(self.options, query_id, int(batch_id), _partition())
        return writer.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        stage = _stage(messages, batchId)
        if self.options.exactly_once and stage is not None:
            staged = staged_commit.staged_of(messages)
            staged_commit.commit(self.options, staged, stage, replayable=True)
        log.info("orbitmq sink: batch %d stored %d messages", batchId, _total(messages))

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        stage = _stage(messages, batchId)
        if self.options.exactly_once and stage is not None:
            staged = staged_commit.staged_of(messages)
            staged_commit.roll_back(self.options, staged, stage, replayable=True)
        log.warning(
            "orbitmq sink: batch %d failed after storing %d messages (at least once: the"
            " replay sends them again with the same ids)",
            batchId,
            _total(messages),
        )
