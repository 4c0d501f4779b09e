"""A consumer group's settings on one broker (RocketMQ's ``SubscriptionGroupConfig``): the
body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200) and an entry of subscriptionGroup.json."""

from __future__ import annotations

from dataclasses import dataclass

from orbitmq.protocol.body.json_codec import Body
from orbitmq.protocol.body.route import MASTER_ID


@dataclass(slots=True)
class SubscriptionGroupConfig(Body):
    """How one consumer group may consume: enabled, retry queues and times, which broker
    serves it when it is slow, and (RocketMQ 5) whether it consumes in order: a FIFO group,
    ``consumeMessageOrderly`` true, to which POP and the 5.x clients hand out a message
    group's messages one at a time. Plain data, owned by its manager."""

    group_name: str = ""
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    consume_message_orderly: bool = False
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
