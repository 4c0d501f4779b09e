"""A topic's system flag (RocketMQ's ``TopicSysFlag``): whether the topic belongs to a unit
and whether a unit subscribes to it.

The broker sets the flag when it creates a topic and the name server answers queries by it.
Constants and pure functions only: safe from any thread.
"""

from __future__ import annotations

from typing import Final

FLAG_UNIT: Final = 0x1 << 0
FLAG_UNIT_SUB: Final = 0x1 << 1


def build_topic_sys_flag(unit: bool, has_unit_sub: bool) -> int:
    """RocketMQ's ``TopicSysFlag.buildSysFlag``."""
    return (FLAG_UNIT if unit else 0) | (FLAG_UNIT_SUB if has_unit_sub else 0)


def has_unit_flag(sys_flag: int) -> bool:
    return sys_flag & FLAG_UNIT == FLAG_UNIT


def has_unit_sub_flag(sys_flag: int) -> bool:
    return sys_flag & FLAG_UNIT_SUB == FLAG_UNIT_SUB
