"""The driver's half of the sink's exactlyOnce: the tasks staged their rows in batches, each
batch one half message (invisible); the driver's commit stores each batch in its queue with
one END_TRANSACTION, or rolls them back when Spark aborts.

A micro-batch can be committed twice: Spark replays a batch whose commit it did not record
(a crash or a failure during or right after the commit), and the replay's tasks stage every
row again. So before its first verdict, a batch's commit records an intent at the broker,
the halves it is about to commit: messages in ``INTENT_TOPIC`` keyed by query and batch id,
found again through the broker's key index. A later commit of the same batch finds the
intent, commits those halves (the broker answers a half resolved before with SUCCESS and
stores nothing again) and rolls back the replay's own. Every row becomes visible once,
wherever Spark runs and keeps its checkpoint.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Final

import orjson

from orbitmq.client import LocalTransactionState, MQClientError, NoRouteError, TransactionVerdict
from orbitmq.common import Message
from orbitmq.spark import client_pool
from orbitmq.spark.message_writer import StagedBatch, WriteSummary
from orbitmq.spark.options import SinkOptions

log = logging.getLogger(__name__)

#: Verdicts for a whole micro-batch may take a while; this only bounds a wedged broker.
_VERDICTS_TIMEOUT_S: Final = 600.0
#: Where commit intents are kept (one queue is enough: they are found by key).
INTENT_TOPIC: Final = "ORBITMQ_SPARK_SINK_INTENTS"
#: Staged batches per intent message: about 3 MiB of JSON, under the broker's 4 MiB limit.
_HALVES_PER_CHUNK: Final = 50_000
#: The broker answers a key query with at most maxMsgsNumBatch (64) messages.
_MAX_CHUNKS: Final = 64
_CHUNK: Final = "ORBITMQ_INTENT_CHUNK"
_ATTEMPT: Final = "ORBITMQ_INTENT_ATTEMPT"


def staged_of(messages: Iterable[object]) -> list[StagedBatch]:
    """The staged batches of the tasks' commit messages, partition by partition, each
    queue's in row order."""
    summaries = sorted((m for m in messages if isinstance(m, WriteSummary)), key=_partition)
    return [s for summary in summaries for s in summary.staged]


def _partition(summary: WriteSummary) -> int:
    return summary.partition


def _failpoint(options: SinkOptions, where: str, stage: str | None) -> None:
    point = options.failpoint
    if point is None:
        return
    name, _, batch = point.partition(":")
    batch_id = None if stage is None else stage.rpartition("/")[2]
    if name == where and (not batch or batch_id is None or batch == batch_id):
        raise RuntimeError(f"failpoint {point}: the commit stops {where.replace('-', ' ')}")


def commit(options: SinkOptions, staged: Sequence[StagedBatch], stage: str | None) -> None:
    """Make ``staged`` visible, once; with ``stage`` (a micro-batch's query and batch id),
    as the first commit of that stage decided (see the module's docstring)."""
    planned = list(staged)
    extra: list[StagedBatch] = []
    if stage is not None:
        recorded = find_intent(options, stage)
        if recorded is not None:
            planned = recorded
            known = {(s.broker_name, s.commit_log_offset) for s in planned}
            extra = [s for s in staged if (s.broker_name, s.commit_log_offset) not in known]
            log.info(
                "%s was committed before: %d messages as then, %d staged again dropped",
                stage,
                len(planned),
                len(extra),
            )
        else:
            record_intent(options, stage, planned)
    _failpoint(options, "before-commit", stage)
    _verdicts(options, planned, LocalTransactionState.COMMIT_MESSAGE)
    _verdicts(options, extra, LocalTransactionState.ROLLBACK_MESSAGE)
    _failpoint(options, "after-commit", stage)


def roll_back(options: SinkOptions, staged: Sequence[StagedBatch], stage: str | None) -> None:
    """Drop ``staged`` (Spark aborted the write), unless a commit of the stage already
    decided to make its messages visible."""
    if stage is not None and find_intent(options, stage) is not None:
        return
    _verdicts(options, staged, LocalTransactionState.ROLLBACK_MESSAGE)


def encode_intent(staged: Sequence[StagedBatch]) -> list[bytes]:
    """The intent's message bodies: each chunk names its queues once, then its halves."""
    chunks = []
    for start in range(0, max(len(staged), 1), _HALVES_PER_CHUNK):
        part = staged[start : start + _HALVES_PER_CHUNK]
        queues: dict[tuple[str, str, int], int] = {}
        halves = []
        for s in part:
            index = queues.setdefault((s.broker_name, s.topic, s.queue_id), len(queues))
            halves.append([index, s.half_offset, s.commit_log_offset, s.msg_id])
        chunks.append(orjson.dumps({"queues": list(queues), "halves": halves}))
    return chunks


def decode_intent(chunks: Sequence[bytes]) -> list[StagedBatch]:
    staged = []
    for chunk in chunks:
        data: dict[str, Any] = orjson.loads(chunk)
        queues = [tuple(q) for q in data["queues"]]
        for index, half_offset, commit_log_offset, msg_id in data["halves"]:
            broker_name, topic, queue_id = queues[index]
            staged.append(
                StagedBatch(broker_name, topic, queue_id, half_offset, commit_log_offset, msg_id)
            )
    return staged


def record_intent(options: SinkOptions, stage: str, staged: Sequence[StagedBatch]) -> None:
    """Store the intent, whole, before any verdict is sent."""
    chunks = encode_intent(staged)
    if len(chunks) > _MAX_CHUNKS:
        raise MQClientError(
            f"{stage}: {len(staged)} staged batches is more than an exactly-once micro-batch"
            f" can commit ({_MAX_CHUNKS * _HALVES_PER_CHUNK}); lower maxOffsetsPerTrigger"
        )
    attempt = uuid.uuid4().hex
    client_pool.ensure_topic(options.namesrv_addr, INTENT_TOPIC)
    producer = client_pool.producer_for(options.namesrv_addr, options.producer_group)
    for i, body in enumerate(chunks):
        msg = Message(INTENT_TOPIC, body)
        msg.keys = [stage]
        msg.properties[_CHUNK] = f"{i}/{len(chunks)}"
        msg.properties[_ATTEMPT] = attempt
        producer.send(msg)


def find_intent(options: SinkOptions, stage: str) -> list[StagedBatch] | None:
    """The halves a commit of ``stage`` recorded, if one recorded them all."""
    admin = client_pool.admin_for(options.namesrv_addr)
    try:
        found = admin.query_messages_by_key(INTENT_TOPIC, stage, _MAX_CHUNKS, 0, _now_ms())
    except NoRouteError:
        return None  # no intent was ever recorded on this cluster
    attempts: dict[str, dict[int, bytes]] = {}
    counts: dict[str, int] = {}
    for m in found:
        attempt = m.properties.get(_ATTEMPT)
        index, _, total = m.properties.get(_CHUNK, "").partition("/")
        if attempt is None or not index.isdigit() or not total.isdigit():
            continue
        attempts.setdefault(attempt, {})[int(index)] = m.body
        counts[attempt] = int(total)
    for attempt, chunks in attempts.items():
        # A commit that died while recording left a partial intent: it sent no verdict.
        if len(chunks) == counts[attempt]:
            return decode_intent([chunks[i] for i in range(len(chunks))])
    return None


def _now_ms() -> int:
    return int(time.time() * 1000) + 60_000


def _verdicts(
    options: SinkOptions, staged: Sequence[StagedBatch], state: LocalTransactionState
) -> None:
    if not staged:
        return
    # One sequence per queue, in row order: a queue stores committed batches in the order
    # of their commits, so rows keep the order the tasks wrote them (per key, too).
    by_queue: dict[tuple[str, str, int], list[TransactionVerdict]] = {}
    for s in staged:
        verdict = TransactionVerdict(
            broker_name=s.broker_name,
            topic=s.topic,
            half_offset=s.half_offset,
            commit_log_offset=s.commit_log_offset,
            msg_id=s.msg_id,
            state=state,
        )
        by_queue.setdefault((s.broker_name, s.topic, s.queue_id), []).append(verdict)
    producer = client_pool.producer_for(options.namesrv_addr, options.producer_group)
    producer.end_transactions(list(by_queue.values()), timeout_s=_VERDICTS_TIMEOUT_S)
