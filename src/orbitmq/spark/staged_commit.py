"""The driver's half of the sink's exactlyOnce: the tasks staged their rows in batches, each
batch one half message (invisible); the driver's commit stores each batch in its queue with
one END_TRANSACTION, or rolls them back when Spark aborts.

A micro-batch can be committed twice: Spark replays a batch whose commit it did not record
(a crash or a failure during or right after the commit), and the replay's tasks stage every
row again. So before its first verdict, a batch's commit records an intent at the broker
(``commit_intent``), the halves it is about to commit, keyed by query and batch id. A later
commit of the same batch finds the intent, commits those halves (the broker answers a half
resolved before with SUCCESS and stores nothing again) and rolls back the replay's own.
Every row becomes visible once, wherever Spark runs and keeps its checkpoint.

Halves no verdict names (a failed or killed task attempt's, a dead driver's) are settled by
the broker's check-back, which the sink's producers answer from the same intent
(``half_check``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Final

from orbitmq.client import LocalTransactionState, TransactionVerdict
from orbitmq.spark.commit_intent import find_intent, record_abort, record_intent
from orbitmq.spark.half_check import sink_producer
from orbitmq.spark.message_writer import WriteSummary
from orbitmq.spark.options import SinkOptions
from orbitmq.spark.staged_batch import StagedBatch

log = logging.getLogger(__name__)

#: Verdicts for a whole micro-batch may take a while; this only bounds a wedged broker.
_VERDICTS_TIMEOUT_S: Final = 600.0


def staged_of(messages: Iterable[object]) -> list[StagedBatch]:
    """The staged batches of the tasks' commit messages, partition by partition, each
    queue's in row order."""
    summaries = sorted((m for m in messages if isinstance(m, WriteSummary)), key=_partition)
    return [s for summary in summaries for s in summary.staged]


def _partition(summary: WriteSummary) -> int:
    return summary.partition


def _failpoint(options: SinkOptions, where: str, stage: str) -> None:
    point = options.failpoint
    if point is None:
        return
    name, _, batch = point.partition(":")
    if name == where and (not batch or batch == stage.rpartition("/")[2]):
        raise RuntimeError(f"failpoint {point}: the commit stops {where.replace('-', ' ')}")


def commit(
    options: SinkOptions, staged: Sequence[StagedBatch], stage: str, *, replayable: bool
) -> None:
    """Make ``staged`` visible, once, as the first commit of ``stage`` decided (see the
    module's docstring); a batch write's stage (not ``replayable``) has no commit before."""
    planned = list(staged)
    extra: list[StagedBatch] = []
    recorded = find_intent(options.endpoint, stage) if replayable else None
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
        record_intent(sink_producer(options), options.endpoint, stage, planned)
    _failpoint(options, "before-commit", stage)
    _verdicts(options, planned, LocalTransactionState.COMMIT_MESSAGE)
    _verdicts(options, extra, LocalTransactionState.ROLLBACK_MESSAGE)
    _failpoint(options, "after-commit", stage)


def roll_back(
    options: SinkOptions, staged: Sequence[StagedBatch], stage: str, *, replayable: bool
) -> None:
    """Drop ``staged`` (Spark aborted the write). A streaming batch (``replayable``) keeps
    what a commit of it already decided to make visible; a batch write, never run again,
    records its abort first, so that checks of halves its tasks left are rolled back."""
    if replayable:
        if find_intent(options.endpoint, stage) is not None:
            return
    else:
        record_abort(sink_producer(options), options.endpoint, stage)
    _verdicts(options, staged, LocalTransactionState.ROLLBACK_MESSAGE)


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
    producer = sink_producer(options)
    producer.end_transactions(list(by_queue.values()), timeout_s=_VERDICTS_TIMEOUT_S)
