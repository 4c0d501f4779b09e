"""The timer store (RocketMQ 5's timer messages): intake on the put path, the time wheel,
the timer log, the checkpoint and the service that delivers each timer at its time."""

from orbitmq.store.timer.timer_checkpoint import TimerCheckpoint
from orbitmq.store.timer.timer_intake import (
    build_delete_key,
    is_timer_message,
    transform_timer_message,
)
from orbitmq.store.timer.timer_log import TimerLog, TimerUnit
from orbitmq.store.timer.timer_message_store import TimerHostStore, TimerMessageStore
from orbitmq.store.timer.timer_wheel import Slot, TimerWheel

__all__ = [
    "Slot",
    "TimerCheckpoint",
    "TimerHostStore",
    "TimerLog",
    "TimerMessageStore",
    "TimerUnit",
    "TimerWheel",
    "build_delete_key",
    "is_timer_message",
    "transform_timer_message",
]
