"""PullSysFlag: RocketMQ's bit values, built and read back."""

from __future__ import annotations

from orbitmq.protocol.pull_sys_flag import (
    FLAG_CLASS_FILTER,
    FLAG_COMMIT_OFFSET,
    FLAG_LITE_PULL_MESSAGE,
    FLAG_SUBSCRIPTION,
    FLAG_SUSPEND,
    build_sys_flag,
    clear_commit_offset_flag,
    has_class_filter_flag,
    has_commit_offset_flag,
    has_lite_pull_flag,
    has_subscription_flag,
    has_suspend_flag,
)


def test_bits_are_rocketmqs() -> None:
    assert (
        FLAG_COMMIT_OFFSET,
        FLAG_SUSPEND,
        FLAG_SUBSCRIPTION,
        FLAG_CLASS_FILTER,
        FLAG_LITE_PULL_MESSAGE,
    ) == (1, 2, 4, 8, 16)


def test_build_sys_flag() -> None:
    assert build_sys_flag() == 0
    # What a push consumer sends with a committed offset: RocketMQ's usual 7.
    assert build_sys_flag(commit_offset=True, suspend=True, subscription=True) == 7
    assert build_sys_flag(class_filter=True, lite_pull=True) == 24


def test_each_flag_reads_back_alone() -> None:
    checks = [
        (has_commit_offset_flag, FLAG_COMMIT_OFFSET),
        (has_suspend_flag, FLAG_SUSPEND),
        (has_subscription_flag, FLAG_SUBSCRIPTION),
        (has_class_filter_flag, FLAG_CLASS_FILTER),
        (has_lite_pull_flag, FLAG_LITE_PULL_MESSAGE),
    ]
    for has, flag in checks:
        for _, other in checks:
            assert has(other) is (other == flag)
        assert has(0b11111)


def test_clear_commit_offset_flag_keeps_the_others() -> None:
    assert clear_commit_offset_flag(7) == FLAG_SUSPEND | FLAG_SUBSCRIPTION
    assert clear_commit_offset_flag(FLAG_SUSPEND) == FLAG_SUSPEND
