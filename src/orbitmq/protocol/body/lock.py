"""Queue locks for orderly consumption: LOCK_BATCH_MQ (41) and UNLOCK_BATCH_MQ (42) bodies.

The queues are ``orbitmq.common.MessageQueue``, written as ``{"brokerName", "queueId",
"topic"}`` like RocketMQ's."""

from __future__ import annotations

from dataclasses import dataclass, field

from orbitmq.common import MessageQueue
from orbitmq.protocol.body.json_codec import Body, json_name


@dataclass(slots=True)
class LockBatchRequestBody(Body):
    """The queues a client wants to own for its group."""

    consumer_group: str = ""
    client_id: str = ""
    mq_set: set[MessageQueue] = field(default_factory=set)


@dataclass(slots=True)
class LockBatchResponseBody(Body):
    """The queues the client now owns (a subset of those asked for)."""

    lock_ok_mq_set: set[MessageQueue] = field(
        default_factory=set, metadata=json_name("lockOKMQSet")
    )


@dataclass(slots=True)
class UnlockBatchRequestBody(Body):
    """The queues a client gives up for its group."""

    consumer_group: str = ""
    client_id: str = ""
    mq_set: set[MessageQueue] = field(default_factory=set)
