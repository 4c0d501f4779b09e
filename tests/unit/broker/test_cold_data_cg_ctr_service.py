"""ColdDataCgCtrService's windows and thresholds, and the strategies that adapt them, as
RocketMQ 5's ColdDataCgCtrService / SimpleColdCtrStrategy / PIDAdaptiveColdCtrStrategy."""

from __future__ import annotations

from orbitmq.broker import BrokerConfig
from orbitmq.broker.cold_ctr_strategy import (
    MAX_STORE_NUMS,
    PIDAdaptiveColdCtrStrategy,
    SimpleColdCtrStrategy,
)
from orbitmq.broker.cold_data_cg_ctr_service import (
    ADAPTIVE,
    CG_COLD_ACC_RESIDE_TIMEOUT_MILLS,
    ColdDataCgCtrService,
)
from orbitmq.store import MessageStoreConfig

MIB = 1024 * 1024


def _service(**broker: object) -> ColdDataCgCtrService:
    config = BrokerConfig(broker_name="b")
    for key, value in broker.items():
        setattr(config, key, value)
    return ColdDataCgCtrService(config, MessageStoreConfig(cold_data_flow_control_enable=True))


def test_a_group_is_controlled_from_its_threshold_until_the_window_ends() -> None:
    service = _service()
    assert not service.is_cg_need_cold_data_flow_ctr("g")  # never read cold data
    service.cold_acc("g", 3 * MIB - 1)
    assert not service.is_cg_need_cold_data_flow_ctr("g")
    service.cold_acc("g", 1)
    assert service.is_cg_need_cold_data_flow_ctr("g")
    assert not service.is_cg_need_cold_data_flow_ctr("other")
    service.clear_data_acc()
    assert not service.is_cg_need_cold_data_flow_ctr("g")
    assert service.runtime_table["g"].cold_acc == 0  # it stays listed for a minute
    service.store_config.cold_data_flow_control_enable = False
    service.cold_acc("g", 10 * MIB)
    assert not service.is_cg_need_cold_data_flow_ctr("g")


def test_the_global_threshold_controls_every_group_that_read_cold_data() -> None:
    service = _service(global_cold_read_threshold=4 * MIB)
    service.cold_acc("a", 2 * MIB)
    service.cold_acc("b", 2 * MIB)
    assert service.is_cg_need_cold_data_flow_ctr("a")
    assert service.is_cg_need_cold_data_flow_ctr("b")
    assert not service.is_cg_need_cold_data_flow_ctr("c")  # read no cold data


def test_a_group_idle_for_a_minute_leaves_the_table() -> None:
    service = _service()
    service.cold_acc("g", 10)
    service.runtime_table["g"].last_cold_read_time_mills -= CG_COLD_ACC_RESIDE_TIMEOUT_MILLS
    service.clear_data_acc()
    assert "g" not in service.runtime_table


def test_an_admin_threshold_wins() -> None:
    service = _service(cold_ctr_strategy_enable=True)
    service.add_or_update_group_config("g", 10 * MIB)
    service.add_or_update_group_config("g" + ADAPTIVE, 20 * MIB)
    assert service.threshold_of("g") == 10 * MIB
    service.remove_group_config("g")
    assert service.threshold_of("g") == 20 * MIB
    service.broker_config.cold_ctr_strategy_enable = False
    assert service.threshold_of("g") == 3 * MIB


def test_the_simple_strategy_raises_a_busy_groups_threshold_then_lowers_it() -> None:
    service = _service(cold_ctr_strategy_enable=True, use_pid_cold_ctr_strategy=False)
    assert isinstance(service.strategy, SimpleColdCtrStrategy)
    service.cold_acc("g", 3 * MIB)
    service.clear_data_acc()
    assert service.config_table == {"g" + ADAPTIVE: int(3 * MIB * 1.5)}
    assert service.threshold_of("g") == int(3 * MIB * 1.5)
    # Over the global threshold: no raise, and the highest thresholds come down 0.8x,
    # never under cgColdReadThreshold.
    service.cold_acc("g", 101 * MIB)
    service.clear_data_acc()
    assert service.config_table == {"g" + ADAPTIVE: int(int(3 * MIB * 1.5) * 0.8)}
    for _ in range(3):
        service.cold_acc("g", 101 * MIB)
        service.clear_data_acc()
    assert service.config_table == {"g" + ADAPTIVE: 3 * MIB}
    # With the strategy off the adaptive thresholds go.
    service.broker_config.cold_ctr_strategy_enable = False
    service.clear_data_acc()
    assert service.config_table == {}


def test_the_pid_strategy_decides_after_ten_windows() -> None:
    service = _service(cold_ctr_strategy_enable=True)
    strategy = service.strategy
    assert isinstance(strategy, PIDAdaptiveColdCtrStrategy)
    assert strategy.expect_global_val == 80 * MIB
    for _ in range(MAX_STORE_NUMS - 1):
        service.cold_acc("g", 3 * MIB)
        service.clear_data_acc()
    assert service.config_table == {}  # factor 0 until the history is full
    service.cold_acc("g", 3 * MIB)
    service.clear_data_acc()
    assert strategy.decision_factor() > 0  # far under 80 MiB a window
    assert service.config_table == {"g" + ADAPTIVE: int(3 * MIB * 1.5)}
    assert len(strategy.history) == MAX_STORE_NUMS


def test_system_groups_are_not_charged() -> None:
    service = _service()
    service.cold_acc("TOOLS_CONSUMER", 10 * MIB)
    service.cold_acc("CID_RMQ_SYS_X", 10 * MIB)
    assert service.global_acc == 0
    assert service.runtime_table == {}
