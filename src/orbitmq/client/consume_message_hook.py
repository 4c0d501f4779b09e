"""Consume hooks (RocketMQ's ConsumeMessageHook): what they are called with, and when."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from orbitmq.common import MessageExt, MessageQueue


@dataclass
class ConsumeMessageContext:
    """What consume hooks see (RocketMQ's ConsumeMessageContext)."""

    consumer_group: str
    message_queue: MessageQueue
    messages: Sequence[MessageExt]
    success: bool = False
    props: dict[str, str] = field(default_factory=dict)


class ConsumeMessageHook(Protocol):
    """Called around each listener call (R30)."""

    def consume_message_before(self, context: ConsumeMessageContext) -> None: ...

    def consume_message_after(self, context: ConsumeMessageContext) -> None: ...
