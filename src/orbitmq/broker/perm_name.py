"""Topic and broker permission bits (RocketMQ's ``PermName``) and topic flags
(``TopicSysFlag``)."""

from __future__ import annotations

from typing import Final

PERM_PRIORITY: Final = 0x1 << 3
PERM_READ: Final = 0x1 << 2
PERM_WRITE: Final = 0x1 << 1
#: A topic others may be created from (TBW102 when autoCreateTopicEnable).
PERM_INHERIT: Final = 0x1

#: TopicSysFlag: the topic belongs to a unit / has a subscription from a unit.
TOPIC_FLAG_UNIT: Final = 0x1 << 0
TOPIC_FLAG_UNIT_SUB: Final = 0x1 << 1


def is_readable(perm: int) -> bool:
    return perm & PERM_READ == PERM_READ


def is_writeable(perm: int) -> bool:
    return perm & PERM_WRITE == PERM_WRITE


def is_inherited(perm: int) -> bool:
    return perm & PERM_INHERIT == PERM_INHERIT


def perm_to_string(perm: int) -> str:
    """RocketMQ's ``RWX`` form: ``"RW-"`` for read and write."""
    return (
        ("R" if is_readable(perm) else "-")
        + ("W" if is_writeable(perm) else "-")
        + ("X" if is_inherited(perm) else "-")
    )


def build_topic_sys_flag(unit: bool, has_unit_sub: bool) -> int:
    """RocketMQ's ``TopicSysFlag.buildSysFlag``."""
    return (TOPIC_FLAG_UNIT if unit else 0) | (TOPIC_FLAG_UNIT_SUB if has_unit_sub else 0)
