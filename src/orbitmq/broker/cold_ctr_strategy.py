"""How a group's cold read threshold adapts (RocketMQ 5's ``ColdCtrStrategy``): raised 1.5x
for a group that reached it while the broker as a whole is not over its global threshold,
lowered 0.8x (never under cgColdReadThreshold) while it is. ``SimpleColdCtrStrategy``
decides by the global state alone; ``PIDAdaptiveColdCtrStrategy`` by a PID controller over
the last 10 windows' global cold reads against 80% of globalColdReadThreshold."""

from __future__ import annotations

from collections import deque
from typing import Final, Protocol


class ColdCtrTarget(Protocol):
    """What a strategy reads and changes: the group thresholds of ``ColdDataCgCtrService``."""

    @property
    def cg_cold_read_threshold(self) -> int: ...

    def is_global_cold_ctr(self) -> bool: ...

    def add_or_update_group_config(self, key: str, threshold: int) -> None: ...


class ColdCtrStrategy(Protocol):
    def decision_factor(self) -> float | None: ...

    def promote(self, key: str, current_threshold: int) -> None: ...

    def decelerate(self, key: str, current_threshold: int) -> None: ...

    def collect(self, global_acc: int) -> None: ...


def _lowered(target: ColdCtrTarget, current_threshold: int) -> int:
    return max(int(current_threshold * 0.8), target.cg_cold_read_threshold)


class SimpleColdCtrStrategy:
    """Raises a group's threshold whenever asked; lowers it only while the global cold reads
    are over globalColdReadThreshold. Stateless; used from the service's task."""

    def __init__(self, target: ColdCtrTarget) -> None:
        self.target = target

    def decision_factor(self) -> float | None:
        return None

    def promote(self, key: str, current_threshold: int) -> None:
        self.target.add_or_update_group_config(key, int(current_threshold * 1.5))

    def decelerate(self, key: str, current_threshold: int) -> None:
        if self.target.is_global_cold_ctr():
            self.target.add_or_update_group_config(key, _lowered(self.target, current_threshold))

    def collect(self, global_acc: int) -> None:
        """Nothing to learn."""


#: The windows the PID controller remembers, and its weights.
MAX_STORE_NUMS: Final = 10
KP: Final = 0.5
KI: Final = 0.3
KD: Final = 0.2


class PIDAdaptiveColdCtrStrategy:
    """Owns the last ``MAX_STORE_NUMS`` errors (expected minus actual global cold bytes per
    window); raises thresholds while the controller's output is positive (room left),
    lowers them while it is negative. Used from the service's task."""

    def __init__(self, target: ColdCtrTarget, expect_global_val: int) -> None:
        self.target = target
        self.expect_global_val = expect_global_val
        self.history: deque[int] = deque(maxlen=MAX_STORE_NUMS)
        self.et = 0

    def decision_factor(self) -> float:
        if len(self.history) < MAX_STORE_NUMS:
            return 0.0
        differential = self.history[-1] - self.history[-2]
        return KP * self.et + KI * sum(self.history) + KD * differential

    def promote(self, key: str, current_threshold: int) -> None:
        if self.decision_factor() > 0:
            self.target.add_or_update_group_config(key, int(current_threshold * 1.5))

    def decelerate(self, key: str, current_threshold: int) -> None:
        if self.decision_factor() < 0:
            self.target.add_or_update_group_config(key, _lowered(self.target, current_threshold))

    def collect(self, global_acc: int) -> None:
        self.et = self.expect_global_val - global_acc
        self.history.append(self.et)
