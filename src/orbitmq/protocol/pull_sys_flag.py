"""The bits of a pull request's ``sysFlag`` (RocketMQ's ``PullSysFlag``).

Consumers build them and the broker reads them: the bits live here, once, for both.
Constants and pure functions only: safe from any thread.
"""

from __future__ import annotations

from typing import Final

#: The request carries the consumer's committed offset for the broker to store.
FLAG_COMMIT_OFFSET: Final = 0x1
#: The broker may hold the pull (long polling) when the queue has nothing new.
FLAG_SUSPEND: Final = 0x1 << 1
#: The request carries its subscription expression (else the broker uses the heartbeat's).
FLAG_SUBSCRIPTION: Final = 0x1 << 2
FLAG_CLASS_FILTER: Final = 0x1 << 3
#: The pull comes from a lite pull consumer.
FLAG_LITE_PULL_MESSAGE: Final = 0x1 << 4


def build_sys_flag(
    *,
    commit_offset: bool = False,
    suspend: bool = False,
    subscription: bool = False,
    class_filter: bool = False,
    lite_pull: bool = False,
) -> int:
    """RocketMQ's ``PullSysFlag.buildSysFlag``."""
    return (
        (FLAG_COMMIT_OFFSET if commit_offset else 0)
        | (FLAG_SUSPEND if suspend else 0)
        | (FLAG_SUBSCRIPTION if subscription else 0)
        | (FLAG_CLASS_FILTER if class_filter else 0)
        | (FLAG_LITE_PULL_MESSAGE if lite_pull else 0)
    )


def clear_commit_offset_flag(sys_flag: int) -> int:
    return sys_flag & ~FLAG_COMMIT_OFFSET


def has_commit_offset_flag(sys_flag: int) -> bool:
    return sys_flag & FLAG_COMMIT_OFFSET == FLAG_COMMIT_OFFSET


def has_suspend_flag(sys_flag: int) -> bool:
    return sys_flag & FLAG_SUSPEND == FLAG_SUSPEND


def has_subscription_flag(sys_flag: int) -> bool:
    return sys_flag & FLAG_SUBSCRIPTION == FLAG_SUBSCRIPTION


def has_class_filter_flag(sys_flag: int) -> bool:
    return sys_flag & FLAG_CLASS_FILTER == FLAG_CLASS_FILTER


def has_lite_pull_flag(sys_flag: int) -> bool:
    return sys_flag & FLAG_LITE_PULL_MESSAGE == FLAG_LITE_PULL_MESSAGE
