"""``QueryConsumeQueueResponseBody``: QUERY_CONSUME_QUEUE (321)'s answer, the raw units of a
consume queue (mqadmin queryCq), with RocketMQ's member names."""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.protocol.body.heartbeat import SubscriptionData
from orbitmq.protocol.body.json_codec import Body


@dataclass(slots=True)
class ConsumeQueueData(Body):
    """One 20-byte unit: where its message lies in the commit log and its tag hash code.
    ``extend_data_json`` and ``bit_map`` describe a ConsumeQueueExt unit (none in OrbitMQ);
    ``eval`` says whether the asked group's subscription takes the message; ``msg`` carries a
    problem with the unit."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None


@dataclass(slots=True)
class QueryConsumeQueueResponseBody(Body):
    """The units asked for, the queue's index range and, when a group was named, its
    subscription and filter (or why there is none)."""

    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] | None = None
    max_queue_index: int = 0
    min_queue_index: int = 0
