"""The exactly-once sink's answer to the broker's checks of its halves.

A half that no verdict resolved (a task attempt that failed or was killed after staging
it, a commit that died before its verdicts reached the broker) is asked about by the
broker's check-back (CHECK_TRANSACTION_STATE, after ``transactionTimeOut``) and sent to
any live producer of the sink's group: every sink producer (each Python worker's and the
driver's) answers the same way, from its stage's record at the broker (``commit_intent``):

- a whole commit intent that names the half (its SINK_HALF_PROPERTY): COMMIT, as that
  commit decided (the commit's own verdict may be on its way, or was lost with its driver);
- a whole commit intent that does not, or a batch write's abort: ROLLBACK (the half is an
  attempt's that Spark did not keep, or a replay's that the first commit made needless);
- no record yet: UNKNOW. The batch is still running, or a streaming batch failed and its
  replay will record the intent; the broker asks again next ``transactionCheckInterval``.
  A stage never finished (its query never restarted) keeps its halves invisible until the
  broker discards them after ``transactionCheckMax`` checks.

A half without the sink's properties (another producer of the group) is answered UNKNOW.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from orbitmq.client import LocalTransactionState
from orbitmq.common import Message, MessageExt
from orbitmq.spark import client_pool
from orbitmq.spark.commit_intent import StageRecord, read_stage
from orbitmq.spark.options import Endpoint, SinkOptions
from orbitmq.spark.staged_batch import SINK_HALF_PROPERTY, SINK_STAGE_PROPERTY
from orbitmq.sync import Producer

log = logging.getLogger(__name__)


class StagedHalfChecker:
    """The sink producers' TransactionListener: owns the records of finished stages read so
    far (a record, once whole, never changes). Safe across threads: checks run on the
    producer's check threads."""

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._finished: dict[str, StageRecord] = {}
        self._lock = threading.Lock()

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        """Not used: the sink stages halves and sends verdicts itself."""
        return LocalTransactionState.UNKNOW

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        stage = msg.properties.get(SINK_STAGE_PROPERTY)
        half_id = msg.properties.get(SINK_HALF_PROPERTY)
        if not stage or not half_id:
            return LocalTransactionState.UNKNOW
        record = self._record(stage)
        if record.aborted:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        elif record.intent is None:
            state = LocalTransactionState.UNKNOW
        elif any(s.half_id == half_id for s in record.intent):
            state = LocalTransactionState.COMMIT_MESSAGE
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        log.info("check of staged half %s of %s: %s", half_id, stage, state.name)
        return state

    def _record(self, stage: str) -> StageRecord:
        with self._lock:
            known = self._finished.get(stage)
        if known is not None:
            return known
        record = read_stage(self._endpoint, stage)
        if record.aborted or record.intent is not None:
            with self._lock:
                self._finished[stage] = record
        return record


def sink_producer(options: SinkOptions) -> Producer:
    """This process's producer of the sink's group: a transactional one, whose listener
    answers the broker's checks of the sink's halves."""
    endpoint = options.endpoint
    return client_pool.producer_for(
        endpoint, options.producer_group, lambda: StagedHalfChecker(endpoint)
    )
