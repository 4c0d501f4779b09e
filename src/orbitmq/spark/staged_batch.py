"""``StagedBatch``: one half message the exactly-once sink staged, and the names that tie a
half to its micro-batch (the properties every staged half carries, the stage's name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: On every staged half: the stage (write or query, and batch) it belongs to, so that a
#: check of the half finds that stage's commit intent.
SINK_STAGE_PROPERTY: Final = "ORBITMQ_SINK_STAGE"
#: On every staged half: an id of its own, made per send attempt, that the intent names.
#: Not its offsets: a check names the half's current copy, which the broker's check-back
#: stores anew each time.
SINK_HALF_PROPERTY: Final = "ORBITMQ_SINK_HALF"


def stage_name(write_id: str, batch_id: int) -> str:
    """A micro-batch's name (a streaming query's id and the batch id; a batch write's id
    and 0): the key of its commit intent."""
    return f"{write_id}/{batch_id}"


@dataclass(frozen=True)
class StagedBatch:
    """A batch of rows a task staged (exactlyOnce) as one half message on the queue its rows
    go to: what the driver's verdict names. Immutable, so safe to share."""

    broker_name: str
    topic: str
    queue_id: int
    #: The half's offset in the half topic (RocketMQ's tranStateTableOffset).
    half_offset: int
    commit_log_offset: int
    #: The half's own message id (its rows keep their UNIQ_KEYs).
    msg_id: str
    #: The half's SINK_HALF_PROPERTY ("" in intents recorded before halves carried one).
    half_id: str = ""
