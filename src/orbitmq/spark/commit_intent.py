"""Commit intents: what a micro-batch's commit decided, kept at the broker so that another
process can read it (a replay of the batch, or a producer answering a check of a half).

An intent lists the halves a commit is about to make visible, recorded whole before any
verdict is sent: messages in ``INTENT_TOPIC`` keyed by the stage's name, found again
through the broker's key index, in chunks that each carry the recording attempt's id and
their place (a commit that died while recording left a partial intent, and sent no
verdict). An abort record (a batch write that failed: it is never run again under the same
name) says that nothing of the stage is to be committed.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from orbitmq.client import MQClientError, NoRouteError
from orbitmq.common import Message
from orbitmq.spark import client_pool
from orbitmq.spark.options import Endpoint
from orbitmq.spark.staged_batch import StagedBatch
from orbitmq.sync import Producer

#: Where commit intents are kept (one queue is enough: they are found by key).
INTENT_TOPIC: Final = "ORBITMQ_SPARK_SINK_INTENTS"
#: Staged batches per intent message: about 3 MiB of JSON, under the broker's 4 MiB limit.
_HALVES_PER_CHUNK: Final = 50_000
#: The broker answers a key query with at most maxMsgsNumBatch (64) messages.
_MAX_CHUNKS: Final = 64
_CHUNK: Final = "ORBITMQ_INTENT_CHUNK"
_ATTEMPT: Final = "ORBITMQ_INTENT_ATTEMPT"
#: On an abort record instead of the chunk property.
_ABORTED: Final = "ORBITMQ_INTENT_ABORTED"


@dataclass(frozen=True)
class StageRecord:
    """What the broker holds about one stage: the halves its commit recorded (None: no
    whole intent) and whether a batch write's abort ended it. Immutable."""

    intent: list[StagedBatch] | None
    aborted: bool


def encode_intent(staged: Sequence[StagedBatch]) -> list[bytes]:
    """The intent's message bodies: each chunk names its queues once, then its halves."""
    chunks = []
    for start in range(0, max(len(staged), 1), _HALVES_PER_CHUNK):
        part = staged[start : start + _HALVES_PER_CHUNK]
        queues: dict[tuple[str, str, int], int] = {}
        halves = []
        for s in part:
            index = queues.setdefault((s.broker_name, s.topic, s.queue_id), len(queues))
            halves.append([index, s.half_offset, s.commit_log_offset, s.msg_id, s.half_id])
        chunks.append(orjson.dumps({"queues": list(queues), "halves": halves}))
    return chunks


def decode_intent(chunks: Sequence[bytes]) -> list[StagedBatch]:
    staged = []
    for chunk in chunks:
        data: dict[str, Any] = orjson.loads(chunk)
        queues = [tuple(q) for q in data["queues"]]
        for index, half_offset, commit_log_offset, msg_id, *half_id in data["halves"]:
            broker_name, topic, queue_id = queues[index]
            staged.append(
                StagedBatch(
                    broker_name,
                    topic,
                    queue_id,
                    half_offset,
                    commit_log_offset,
                    msg_id,
                    half_id[0] if half_id else "",
                )
            )
    return staged


def record_intent(
    producer: Producer, endpoint: Endpoint, stage: str, staged: Sequence[StagedBatch]
) -> None:
    """Store the intent, whole, before any verdict is sent."""
    chunks = encode_intent(staged)
    if len(chunks) > _MAX_CHUNKS:
        raise MQClientError(
            f"{stage}: {len(staged)} staged batches is more than an exactly-once micro-batch"
            f" can commit ({_MAX_CHUNKS * _HALVES_PER_CHUNK}); lower maxOffsetsPerTrigger"
        )
    attempt = uuid.uuid4().hex
    client_pool.ensure_topic(endpoint, INTENT_TOPIC)
    for i, body in enumerate(chunks):
        msg = Message(INTENT_TOPIC, body)
        msg.keys = [stage]
        msg.properties[_CHUNK] = f"{i}/{len(chunks)}"
        msg.properties[_ATTEMPT] = attempt
        producer.send(msg)


def record_abort(producer: Producer, endpoint: Endpoint, stage: str) -> None:
    """Store that ``stage`` (a batch write, never run again) ended without a commit."""
    client_pool.ensure_topic(endpoint, INTENT_TOPIC)
    msg = Message(INTENT_TOPIC, b"aborted")
    msg.keys = [stage]
    msg.properties[_ABORTED] = "true"
    producer.send(msg)


def read_stage(endpoint: Endpoint, stage: str) -> StageRecord:
    """What the broker holds about ``stage``: a whole intent (the first found, if more were
    recorded) and whether an abort record exists."""
    admin = client_pool.admin_for(endpoint)
    try:
        found = admin.query_messages_by_key(INTENT_TOPIC, stage, _MAX_CHUNKS, 0, _now_ms())
    except NoRouteError:
        return StageRecord(None, False)  # nothing was ever recorded on this cluster
    attempts: dict[str, dict[int, bytes]] = {}
    counts: dict[str, int] = {}
    aborted = False
    for m in found:
        if m.properties.get(_ABORTED) == "true":
            aborted = True
            continue
        attempt = m.properties.get(_ATTEMPT)
        index, _, total = m.properties.get(_CHUNK, "").partition("/")
        if attempt is None or not index.isdigit() or not total.isdigit():
            continue
        attempts.setdefault(attempt, {})[int(index)] = m.body
        counts[attempt] = int(total)
    for attempt, chunks in attempts.items():
        # A commit that died while recording left a partial intent: it sent no verdict.
        if len(chunks) == counts[attempt]:
            return StageRecord(decode_intent([chunks[i] for i in range(len(chunks))]), aborted)
    return StageRecord(None, aborted)


def find_intent(endpoint: Endpoint, stage: str) -> list[StagedBatch] | None:
    """The halves a commit of ``stage`` recorded, if one recorded them all."""
    return read_stage(endpoint, stage).intent


def _now_ms() -> int:
    return int(time.time() * 1000) + 60_000
