"""The driver's half of the sink's exactlyOnce: the tasks staged their messages as half
messages (invisible); the driver's commit turns them into stored messages with one
END_TRANSACTION each, or rolls them back when Spark aborts.

A micro-batch can be committed twice: Spark replays a batch whose commit it did not record
(a crash or a failure during or right after the commit), and the replay's tasks stage every
message again. So before its first verdict, a batch's commit writes an intent beside the
query's checkpoint (``<checkpoint>/orbitmq-sink/<batch id>.json``): the halves it is about to
commit. A later commit of the same batch finds the intent, commits those halves (the broker
answers a half resolved before with SUCCESS and stores nothing again) and rolls back the
replay's own. Every message becomes visible once. Local (and mounted) checkpoint paths only,
for now.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final
from urllib.parse import urlparse

import orjson

from orbitmq.common import sys_flag as sf
from orbitmq.protocol.header import EndTransactionRequestHeader
from orbitmq.spark import client_pool
from orbitmq.spark.message_writer import StagedMessage, WriteSummary
from orbitmq.spark.options import OptionError, SinkOptions

log = logging.getLogger(__name__)

#: Verdicts for a whole micro-batch may take a while; this only bounds a wedged broker.
_VERDICTS_TIMEOUT_S: Final = 600.0
INTENT_DIR: Final = "orbitmq-sink"


def intent_dir(options: SinkOptions) -> Path:
    """Where a streaming exactlyOnce sink keeps its commit intents; refuses what it cannot
    use (no checkpoint, or one not on a local path)."""
    location = options.checkpoint_location
    if location is None:
        raise OptionError(
            'exactlyOnce in a stream needs the "checkpointLocation" option (its commit'
            " intents live beside the checkpoint)"
        )
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file"):
        raise OptionError(
            f"exactlyOnce keeps its commit intents on local (or mounted) paths only, and the"
            f" checkpoint is {location}"
        )
    return Path(parsed.path if parsed.scheme else location) / INTENT_DIR


def staged_of(messages: Iterable[object]) -> list[StagedMessage]:
    """The halves of the tasks' commit messages, partition by partition, each in row order."""
    summaries = sorted((m for m in messages if isinstance(m, WriteSummary)), key=_partition)
    return [s for summary in summaries for s in summary.staged]


def _partition(summary: WriteSummary) -> int:
    return summary.partition


def _failpoint(options: SinkOptions, where: str, batch_id: int | None) -> None:
    point = options.failpoint
    if point is None:
        return
    name, _, batch = point.partition(":")
    if name == where and (not batch or batch_id is None or int(batch) == batch_id):
        raise RuntimeError(f"failpoint {point}: the commit stops {where.replace('-', ' ')}")


def commit(
    options: SinkOptions,
    staged: Sequence[StagedMessage],
    batch_id: int | None,
    intents: Path | None,
) -> None:
    """Make ``staged`` visible, once; with ``intents``, as the first commit of ``batch_id``
    decided (see the module's docstring)."""
    planned = list(staged)
    extra: list[StagedMessage] = []
    if intents is not None and batch_id is not None:
        path = intents / f"{batch_id}.json"
        if path.exists():
            planned = [StagedMessage(*item) for item in orjson.loads(path.read_bytes())]
            known = {(s.broker_name, s.commit_log_offset) for s in planned}
            extra = [s for s in staged if (s.broker_name, s.commit_log_offset) not in known]
            log.info(
                "batch %d was committed before: %d messages as then, %d staged again dropped",
                batch_id,
                len(planned),
                len(extra),
            )
        else:
            _write_atomically(path, orjson.dumps([_as_row(s) for s in planned]))
    _failpoint(options, "before-commit", batch_id)
    _verdicts(options, planned, sf.TRANSACTION_COMMIT_TYPE)
    _verdicts(options, extra, sf.TRANSACTION_ROLLBACK_TYPE)
    _failpoint(options, "after-commit", batch_id)


def roll_back(
    options: SinkOptions,
    staged: Sequence[StagedMessage],
    batch_id: int | None,
    intents: Path | None,
) -> None:
    """Drop ``staged`` (Spark aborted the write), unless a commit of the batch already
    decided to make its messages visible."""
    if intents is not None and batch_id is not None and (intents / f"{batch_id}.json").exists():
        return
    _verdicts(options, staged, sf.TRANSACTION_ROLLBACK_TYPE)


def _as_row(s: StagedMessage) -> list[object]:
    return [s.broker_name, s.topic, s.queue_id, s.half_offset, s.commit_log_offset, s.msg_id]


def _verdicts(options: SinkOptions, staged: Sequence[StagedMessage], verdict: int) -> None:
    if not staged:
        return
    # One sequence per queue, in row order: a queue stores committed messages in the order
    # of their commits, so rows keep the order the tasks wrote them (per key, too).
    by_queue: dict[tuple[str, str, int], list[tuple[str, str, EndTransactionRequestHeader]]] = {}
    for s in staged:
        header = EndTransactionRequestHeader(
            producer_group=options.producer_group,
            tran_state_table_offset=s.half_offset,
            commit_log_offset=s.commit_log_offset,
            commit_or_rollback=verdict,
            msg_id=s.msg_id,
            transaction_id=s.msg_id,
        )
        key = (s.broker_name, s.topic, s.queue_id)
        by_queue.setdefault(key, []).append((s.broker_name, s.topic, header))
    producer = client_pool.producer_for(options.namesrv_addr, options.producer_group)
    producer.end_transactions(list(by_queue.values()), _VERDICTS_TIMEOUT_S)


def _write_atomically(path: Path, data: bytes) -> None:
    """The intent is either whole or absent, and on disk before any verdict is sent."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    with temporary.open("wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    temporary.replace(path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
