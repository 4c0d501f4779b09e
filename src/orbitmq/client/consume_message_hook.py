"""Consume hooks (RocketMQ's ConsumeMessageHook): what they are called with, and when; and
the consumer's own message filter (R38), for what a tag or SQL92 expression cannot say."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

from orbitmq.common import MessageExt, MessageQueue

#: The ``props`` key under which the push consumer tells the after-hooks how the listener
#: call ended: a ConsumeReturnType name (RocketMQ's MixAll.CONSUME_CONTEXT_TYPE).
CONSUME_CONTEXT_TYPE: Final = "ConsumeContextType"


class ConsumeReturnType(enum.Enum):
    """How a listener call ended (RocketMQ's ConsumeReturnType; the value is its ordinal,
    the contextCode of a SubAfter trace record)."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclass
class ConsumeMessageContext:
    """What consume hooks see (RocketMQ's ConsumeMessageContext). ``mq_trace_context`` is
    where a before-hook leaves what its after-hook needs (RocketMQ's mqTraceContext)."""

    consumer_group: str
    message_queue: MessageQueue
    messages: Sequence[MessageExt]
    success: bool = False
    props: dict[str, str] = field(default_factory=dict)
    mq_trace_context: object | None = None


class ConsumeMessageHook(Protocol):
    """Called around each listener call (R30)."""

    def consume_message_before(self, context: ConsumeMessageContext) -> None: ...

    def consume_message_after(self, context: ConsumeMessageContext) -> None: ...


#: A consumer's own filter (R38): called with each pulled message before any listener or
#: poll sees it; False drops the message (it counts as consumed, like a message the broker's
#: filter skipped). Runs on the consumer's event loop: keep it quick and non-blocking.
MessageFilterHook = Callable[[MessageExt], bool]
