"""PermName and TopicSysFlag: RocketMQ's bit values and its printed form."""

from __future__ import annotations

import pytest

from orbitmq.protocol.perm_name import (
    PERM_INHERIT,
    PERM_PRIORITY,
    PERM_READ,
    PERM_WRITE,
    is_inherited,
    is_readable,
    is_writeable,
    perm_to_string,
)
from orbitmq.protocol.topic_sys_flag import (
    build_topic_sys_flag,
    has_unit_flag,
    has_unit_sub_flag,
)


def test_bits_are_rocketmqs() -> None:
    assert (PERM_PRIORITY, PERM_READ, PERM_WRITE, PERM_INHERIT) == (8, 4, 2, 1)


@pytest.mark.parametrize(
    ("perm", "printed"),
    [
        (0, "---"),
        (6, "RW-"),
        (4, "R--"),
        (2, "-W-"),
        (7, "RWX"),
        (1, "--X"),
        (5, "R-X"),
        (14, "RW-"),
    ],
)
def test_perm_to_string_prints_as_rocketmq(perm: int, printed: str) -> None:
    assert perm_to_string(perm) == printed


def test_predicates() -> None:
    rw = PERM_READ | PERM_WRITE
    assert is_readable(rw) and is_writeable(rw) and not is_inherited(rw)
    assert not is_writeable(rw & ~PERM_WRITE)
    assert is_inherited(PERM_INHERIT) and not is_readable(PERM_INHERIT)


@pytest.mark.parametrize(
    ("unit", "unit_sub", "flag"),
    [(False, False, 0), (True, False, 1), (False, True, 2), (True, True, 3)],
)
def test_topic_sys_flag(unit: bool, unit_sub: bool, flag: int) -> None:
    assert build_topic_sys_flag(unit, unit_sub) == flag
    assert has_unit_flag(flag) is unit
    assert has_unit_sub_flag(flag) is unit_sub
