"""``ColdDataCgCtrService``: how many bytes of cold data each consumer group read in the
current window, and which groups are over their threshold (RocketMQ 5's
``ColdDataCgCtrService``; what GET_COLD_DATA_FLOW_CTR_INFO shows)."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Final

import orjson

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.cold_ctr_strategy import (
    ColdCtrStrategy,
    PIDAdaptiveColdCtrStrategy,
    SimpleColdCtrStrategy,
)
from orbitmq.broker.subscription_group_config import is_sys_consumer_group_pull_message
from orbitmq.common.periodic import cancel_and_wait, run_every
from orbitmq.store import MessageStoreConfig

log = logging.getLogger(__name__)

#: A group that read no cold data for this long leaves the runtime table (ms).
CG_COLD_ACC_RESIDE_TIMEOUT_MILLS: Final = 60 * 1000
#: The window: every group's count (and the global one) starts again this often while the
#: flow control is on (s); 180 s while it is off.
WINDOW_S: Final = 5.0
IDLE_WINDOW_S: Final = 180.0
#: The suffix of a threshold the strategy set (the admin's own key is the bare group).
ADAPTIVE: Final = "||adaptive"
#: Thresholds the strategy lowers per window, at most.
MAX_DECELERATE: Final = 3


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class AccAndTimeStamp:
    """One group's cold bytes in the window and when it last read cold data (wall ms), as
    RocketMQ's ``AccAndTimeStamp`` (its JSON field names)."""

    cold_acc: int = 0
    last_cold_read_time_mills: int = field(default_factory=_now_ms)
    create_time_mills: int = field(default_factory=_now_ms)

    def to_json_dict(self) -> dict[str, int]:
        return {
            "coldAcc": self.cold_acc,
            "createTimeMills": self.create_time_mills,
            "lastColdReadTimeMills": self.last_cold_read_time_mills,
        }


def _base_group(key: str) -> str:
    return key.split(ADAPTIVE, maxsplit=1)[0] if key.endswith(ADAPTIVE) else key


class ColdDataCgCtrService:
    """Owns the runtime table (group -> its window's cold bytes), the config table (group,
    or group + ``ADAPTIVE``, -> its threshold in bytes) and the global count.

    Pulls charge their cold bytes (``cold_acc``) and ask whether their group is controlled
    (``is_cg_need_cold_data_flow_ctr``); a task clears the counts every window (5 s) and
    lets the strategy adapt thresholds (coldCtrStrategyEnable). Event-loop confined.
    """

    def __init__(self, broker_config: BrokerConfig, store_config: MessageStoreConfig) -> None:
        self.broker_config = broker_config
        self.store_config = store_config
        self.runtime_table: dict[str, AccAndTimeStamp] = {}
        self.config_table: dict[str, int] = {}
        self.global_acc = 0
        self.strategy: ColdCtrStrategy = (
            PIDAdaptiveColdCtrStrategy(self, int(broker_config.global_cold_read_threshold * 0.8))
            if broker_config.use_pid_cold_ctr_strategy
            else SimpleColdCtrStrategy(self)
        )
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(
                run_every(self._window_s, self.clear_data_acc, "clearDataAcc"),
                name="ColdDataCgCtrService",
            )

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    def _window_s(self) -> float:
        return WINDOW_S if self.store_config.cold_data_flow_control_enable else IDLE_WINDOW_S

    @property
    def cg_cold_read_threshold(self) -> int:
        return self.broker_config.cg_cold_read_threshold

    # -- the pulls' side ---------------------------------------------------------------------

    def cold_acc(self, group: str, cold_bytes: int) -> None:
        """Charge ``cold_bytes`` a pull of ``group`` read (its coldDataSum); system groups'
        reads are not charged (RocketMQ's store leaves them out of coldDataSum)."""
        if cold_bytes <= 0 or is_sys_consumer_group_pull_message(group):
            return
        self.global_acc += cold_bytes
        acc = self.runtime_table.get(group)
        if acc is None:
            self.runtime_table[group] = AccAndTimeStamp(cold_bytes)
            return
        acc.cold_acc += cold_bytes
        acc.last_cold_read_time_mills = _now_ms()

    def is_cg_need_cold_data_flow_ctr(self, group: str) -> bool:
        """Whether pulls of ``group`` are flow-controlled now: it read cold data in this
        window and reached its threshold, or all groups together reached the global one."""
        if not self.store_config.cold_data_flow_control_enable:
            return False
        if is_sys_consumer_group_pull_message(group):
            return False
        acc = self.runtime_table.get(group)
        if acc is None:
            return False
        if acc.cold_acc >= self.threshold_of(group):
            return True
        return self.global_acc >= self.broker_config.global_cold_read_threshold

    def is_global_cold_ctr(self) -> bool:
        return self.global_acc > self.broker_config.global_cold_read_threshold

    # -- thresholds --------------------------------------------------------------------------

    def add_or_update_group_config(self, key: str, threshold: int) -> None:
        self.config_table[key] = threshold

    def remove_group_config(self, group: str) -> None:
        self.config_table.pop(group, None)

    def _is_admin_config(self, key: str) -> bool:
        return _base_group(key) in self.config_table

    def threshold_of(self, key: str) -> int:
        """The group's threshold: the admin's, else (coldCtrStrategyEnable) the strategy's,
        else cgColdReadThreshold."""
        if self._is_admin_config(key):
            return self.config_table[_base_group(key)]
        threshold = None
        if self.broker_config.cold_ctr_strategy_enable:
            adaptive = key if key.endswith(ADAPTIVE) else key + ADAPTIVE
            threshold = self.config_table.get(adaptive)
        return threshold if threshold is not None else self.broker_config.cg_cold_read_threshold

    # -- the window ----------------------------------------------------------------------------

    def clear_data_acc(self) -> None:
        """End the window: groups idle for a minute leave, the others' counts start again
        from 0 (a group that reached its threshold may get a higher one), and so does the
        global count."""
        strategy_enabled = self.broker_config.cold_ctr_strategy_enable
        if strategy_enabled:
            self.strategy.collect(self.global_acc)
        now = _now_ms()
        for group, acc in list(self.runtime_table.items()):
            threshold = self.threshold_of(group)
            if now >= acc.last_cold_read_time_mills + CG_COLD_ACC_RESIDE_TIMEOUT_MILLS:
                if strategy_enabled:
                    self.config_table.pop(group + ADAPTIVE, None)
                del self.runtime_table[group]
            elif acc.cold_acc >= threshold:
                log.info(
                    "Coldctr consumerGroup: %s, acc: %d, threshold: %d",
                    group,
                    acc.cold_acc,
                    threshold,
                )
                if (
                    strategy_enabled
                    and not self.is_global_cold_ctr()
                    and not self._is_admin_config(group)
                ):
                    self.strategy.promote(group + ADAPTIVE, threshold)
            acc.cold_acc = 0
        if self.is_global_cold_ctr():
            log.info(
                "Coldctr global acc: %d, threshold: %d",
                self.global_acc,
                self.broker_config.global_cold_read_threshold,
            )
        if strategy_enabled:
            self._sort_and_decelerate()
        else:
            for key in [k for k in self.config_table if k.endswith(ADAPTIVE)]:
                del self.config_table[key]
        self.global_acc = 0

    def _sort_and_decelerate(self) -> None:
        """Lower the highest strategy-set thresholds (``MAX_DECELERATE`` at most)."""
        left = MAX_DECELERATE
        for key, _ in sorted(self.config_table.items(), key=lambda item: -item[1]):
            if left == 0:
                break
            if not self._is_admin_config(key):
                self.strategy.decelerate(key, self.threshold_of(key))
                left -= 1

    def get_cold_data_flow_ctr_info(self) -> bytes:
        """GET_COLD_DATA_FLOW_CTR_INFO's body: both tables, the thresholds, the global count."""
        return orjson.dumps(
            {
                "runtimeTable": {g: a.to_json_dict() for g, a in self.runtime_table.items()},
                "configTable": self.config_table,
                "cgColdReadThreshold": self.broker_config.cg_cold_read_threshold,
                "globalColdReadThreshold": self.broker_config.global_cold_read_threshold,
                "globalAcc": self.global_acc,
            }
        )
