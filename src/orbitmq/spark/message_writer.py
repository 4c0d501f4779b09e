"""The sink's task side: rows become messages, each with an id fixed by where it was
written, grouped per queue and sent in batches.

Columns: ``body`` (binary or string, required, non-empty), and optionally ``topic`` (else
the ``topic`` option), ``tags``, ``keys`` (array of strings, or one space-separated string)
and ``properties`` (map of strings). A row with keys goes to the queue its first key hashes
to (RocketMQ's SelectMessageQueueByHash, Java's String.hashCode), so one key's messages stay
in one queue in the order the task wrote them; a row without keys goes round robin.

Each message's UNIQ_KEY (its msgId) is a hash of (write id, batch id, partition, sequence):
a task retried by Spark, or a micro-batch replayed after a crash, sends the same ids again,
so consumers can drop the duplicates that at-least-once delivery allows. A row whose
``properties`` already carry a UNIQ_KEY (a message copied from another topic) keeps it.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Final

from pyspark import TaskContext
from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import ArrayType, BinaryType, MapType, StringType, StructType

from orbitmq.client import MQClientError, SendResult
from orbitmq.common import Message, MessageQueue, OrbitError, decode_message_id
from orbitmq.common import message_const as mc
from orbitmq.common.java_hash import java_string_hash
from orbitmq.spark.half_check import sink_producer
from orbitmq.spark.options import OptionError, SinkOptions
from orbitmq.spark.staged_batch import (
    SINK_HALF_PROPERTY,
    SINK_STAGE_PROPERTY,
    StagedBatch,
    stage_name,
)

log = logging.getLogger(__name__)

SINK_COLUMNS: Final = ("body", "topic", "tags", "keys", "properties")
#: A send request stays under this many body bytes (the broker refuses over 4 MiB).
_REQUEST_BYTES: Final = 3 * 1024 * 1024
#: A failed send is tried this many times in all, on the same queue (order), with backoff.
_SEND_ATTEMPTS: Final = 4
_FIRST_BACKOFF_S: Final = 0.2


def check_sink_schema(schema: StructType, options: SinkOptions) -> None:
    """Refuse a DataFrame the sink cannot write, naming the column and what it takes."""
    fields = {f.name: f.dataType for f in schema.fields}
    unknown = sorted(set(fields) - set(SINK_COLUMNS))
    if unknown:
        raise OptionError(
            f"the orbitmq sink has no column(s) {unknown}: it writes {list(SINK_COLUMNS)}"
        )
    body = fields.get("body")
    if not isinstance(body, (BinaryType, StringType)):
        raise OptionError('the orbitmq sink needs a "body" column of binary or string type')
    if "topic" not in fields and options.topic is None:
        raise OptionError('the orbitmq sink needs a "topic" column or the "topic" option')
    expected: dict[str, tuple[type, ...]] = {
        "topic": (StringType,),
        "tags": (StringType,),
        "keys": (ArrayType, StringType),
    }
    for name, types in expected.items():
        if name in fields and not isinstance(fields[name], types):
            raise OptionError(f'the orbitmq sink\'s "{name}" column must be a string column')
    keys = fields.get("keys")
    if isinstance(keys, ArrayType) and not isinstance(keys.elementType, StringType):
        raise OptionError('the orbitmq sink\'s "keys" column must be array<string> or string')
    properties = fields.get("properties")
    if properties is not None and not (
        isinstance(properties, MapType)
        and isinstance(properties.keyType, StringType)
        and isinstance(properties.valueType, StringType)
    ):
        raise OptionError('the orbitmq sink\'s "properties" column must be map<string,string>')


def message_id(write_id: str, batch_id: int, partition: int, sequence: int) -> str:
    """The UNIQ_KEY of the ``sequence``-th row of a partition: 32 hex digits, like the ids
    RocketMQ's producers make, and the same whenever the row is written again."""
    text = f"{write_id}/{batch_id}/{partition}/{sequence}".encode()
    return hashlib.blake2b(text, digest_size=16).hexdigest().upper()


@dataclass
class WriteSummary(WriterCommitMessage):
    """What one task wrote, for the driver's commit: messages per topic, and with
    exactlyOnce its staged batches, each queue's in the order the task wrote their rows."""

    partition: int
    messages_by_topic: dict[str, int] = field(default_factory=dict)
    write_id: str = ""
    staged: list[StagedBatch] = field(default_factory=list)

    @property
    def messages(self) -> int:
        return sum(self.messages_by_topic.values())


class MessageWriter:
    """Owns one task's pending messages (per queue), the send in flight per queue, its
    sequence and round-robin position; sends through the worker's pooled producer. One
    thread.

    Sends to different queues overlap (the next batch is built while earlier ones travel);
    a queue has at most one send in flight, so its messages are stored in the order the
    task wrote them, retries included."""

    def __init__(self, options: SinkOptions, write_id: str, batch_id: int, partition: int):
        self._options = options
        self._write_id = write_id
        self._batch_id = batch_id
        self._producer = sink_producer(options)
        self._stage = stage_name(write_id, batch_id)
        self._queues: dict[str, list[MessageQueue]] = {}
        self._pending: dict[MessageQueue, list[Message]] = {}
        self._pending_bytes: dict[MessageQueue, int] = {}
        self._in_flight: dict[MessageQueue, tuple[_Sending, list[Message]]] = {}
        #: Per topic, the round-robin position: tasks start at their partition number so
        #: that they do not all begin on queue 0.
        self._next_queue: dict[str, int] = {}
        self._sequence = 0
        self.summary = WriteSummary(partition, write_id=write_id)

    def write(self, batches: Iterator[Any]) -> WriteSummary:
        """Send every row of the Arrow record batches; returns once all are stored."""
        for batch in batches:
            self._add_batch(batch)
        for mq in list(self._pending):
            self._flush(mq)
        for mq in list(self._in_flight):
            self._settle(mq)
        return self.summary

    def _add_batch(self, batch: Any) -> None:
        n = batch.num_rows
        names = batch.schema.names
        bodies = batch.column("body").to_pylist()
        topics = batch.column("topic").to_pylist() if "topic" in names else [None] * n
        tags = batch.column("tags").to_pylist() if "tags" in names else [None] * n
        keys = batch.column("keys").to_pylist() if "keys" in names else [None] * n
        props = batch.column("properties").to_pylist() if "properties" in names else [None] * n
        for body, topic, tag, key, prop in zip(bodies, topics, tags, keys, props, strict=True):
            self._add(body, topic, tag, key, prop)

    def _add(self, body: Any, topic: str | None, tags: str | None, keys: Any, props: Any) -> None:
        partition = self.summary.partition
        if isinstance(body, str):
            body = body.encode()
        if not body:
            raise MQClientError(
                f"row {self._sequence} of partition {partition}: the body is empty or null,"
                " and a message needs one"
            )
        topic = topic or self._options.topic
        if topic is None:
            raise MQClientError(
                f"row {self._sequence} of partition {partition}: the topic is null and no"
                ' "topic" option gives one'
            )
        msg = Message(topic, body, properties=dict(props) if props else {})
        if tags:
            msg.tags = tags
        key_list = keys.split() if isinstance(keys, str) else list(keys or ())
        if key_list:
            msg.keys = key_list
        msg.properties.setdefault(
            mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
            message_id(self._write_id, self._batch_id, partition, self._sequence),
        )
        self._sequence += 1
        mq = self._queue_for(topic, key_list)
        pending = self._pending.setdefault(mq, [])
        pending.append(msg)
        size = self._pending_bytes.get(mq, 0) + len(body) + 64
        self._pending_bytes[mq] = size
        if len(pending) >= self._options.send_batch_size or size >= _REQUEST_BYTES:
            self._flush(mq)

    def _queue_for(self, topic: str, keys: list[str]) -> MessageQueue:
        queues = self._queues.get(topic)
        if queues is None:
            queues = self._queues[topic] = self._producer.fetch_publish_message_queues(topic)
            if not queues:
                raise MQClientError(f"topic {topic} has no writable queue")
        if keys:
            return queues[abs(java_string_hash(keys[0])) % len(queues)]
        position = self._next_queue.get(topic, self.summary.partition)
        self._next_queue[topic] = position + 1
        return queues[position % len(queues)]

    def _flush(self, mq: MessageQueue) -> None:
        messages = self._pending.pop(mq, None)
        self._pending_bytes.pop(mq, None)
        if not messages:
            return
        self._settle(mq)  # the queue's previous batch first: order
        self._in_flight[mq] = (self._send(messages, mq), messages)

    def _send(self, messages: list[Message], mq: MessageQueue) -> _Sending:
        """A batch on its way: stored, or with exactlyOnce staged whole as one half named
        by its stage and an id of its own (a new one each attempt: a half an attempt stored
        without hearing so must not share the id the intent names)."""
        if self._options.exactly_once:
            half_id = uuid.uuid4().hex
            properties = {SINK_STAGE_PROPERTY: self._stage, SINK_HALF_PROPERTY: half_id}
            future = self._producer.send_half_async(messages, mq, properties=properties)
            return _Sending(future, half_id)
        return _Sending(self._producer.send_async(messages, queue=mq), "")

    def _settle(self, mq: MessageQueue) -> None:
        """Wait for the send in flight to ``mq``; a retriable failure is sent again (same
        queue, with backoff) before anything later to that queue."""
        entry = self._in_flight.pop(mq, None)
        if entry is None:
            return
        sending, messages = entry
        result, half_id = self._outcome(sending, messages, mq)
        if self._options.exactly_once:
            _host, commit_log_offset = decode_message_id(result.offset_msg_id)
            self.summary.staged.append(
                StagedBatch(
                    mq.broker_name,
                    mq.topic,
                    mq.queue_id,
                    result.queue_offset,
                    commit_log_offset,
                    result.offset_msg_id,
                    half_id,
                )
            )
        counts = self.summary.messages_by_topic
        counts[mq.topic] = counts.get(mq.topic, 0) + len(messages)
        if self._options.failpoint == "task-exit" and _first_attempt():
            # Testing only: the worker dies as a killed one does, its halves left staged.
            os._exit(3)

    def _outcome(
        self, sending: _Sending, sent: list[Message], mq: MessageQueue
    ) -> tuple[SendResult, str]:
        """The result of a send in flight (and the half id it staged); a retriable failure
        is sent again to the same queue, with backoff, before the caller goes on."""
        delay = _FIRST_BACKOFF_S
        for attempt in range(1, _SEND_ATTEMPTS):
            try:
                return sending.future.result(), sending.half_id  # the send's own timeout
            except OrbitError as exc:
                # Remoting and broker errors say whether another attempt may succeed.
                if not getattr(exc, "retriable", False):
                    raise
                log.warning("send %d to %s failed, again: %s", attempt, mq, exc)
            time.sleep(delay)
            delay *= 2
            sending = self._send(sent, mq)
        return sending.future.result(), sending.half_id


@dataclass(frozen=True)
class _Sending:
    """A send in flight and, when it stages a half, that half's id."""

    future: Future[SendResult]
    half_id: str


def _first_attempt() -> bool:
    context = TaskContext.get()
    return context is not None and context.attemptNumber() == 0
