"""Headers of PULL_MESSAGE (11): a consumer asks for messages from one queue."""

from __future__ import annotations

from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field


class PullMessageRequestHeader(CommandHeader):
    """One pull: the queue, where to read from, how many, and how long the broker may hold
    the request when nothing is there yet (``suspend_timeout_millis``, long polling).

    ``sys_flag`` holds PullSysFlag bits (commit offset, suspend, subscription, class filter);
    ``commit_offset`` is the consumer's progress, committed by the broker when the flag says
    so; ``subscription`` and ``expression_type`` describe the filter when the client sends one,
    ``sub_version`` which version of it the broker should hold.
    """

    consumer_group: str = ext_field("consumerGroup")
    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    queue_offset: int = ext_field("queueOffset")
    max_msg_nums: Int32 = ext_field("maxMsgNums")
    sys_flag: Int32 = ext_field("sysFlag")
    commit_offset: int = ext_field("commitOffset")
    suspend_timeout_millis: int = ext_field("suspendTimeoutMillis")
    subscription: str | None = ext_field("subscription", default=None)
    sub_version: int = ext_field("subVersion")
    expression_type: str | None = ext_field("expressionType", default=None)
    broker_name: str | None = ext_field("bname", default=None)


class PullMessageResponseHeader(CommandHeader):
    """Where the next pull starts and the queue's bounds (queue offsets); which broker of the
    group (0 = master) the consumer should pull from next."""

    suggest_which_broker_id: int = ext_field("suggestWhichBrokerId")
    next_begin_offset: int = ext_field("nextBeginOffset")
    min_offset: int = ext_field("minOffset")
    max_offset: int = ext_field("maxOffset")
