"""Permission bits of a topic, a queue and a broker (RocketMQ's ``PermName``).

The broker stamps them on its topics and on itself (``brokerPermission``), the name server
changes them (wipe and add write permission) and the client reads them from routes: the bits
live here, once, for all three. Constants and pure functions only: safe from any thread.
"""

from __future__ import annotations

from typing import Final

PERM_PRIORITY: Final = 0x1 << 3
PERM_READ: Final = 0x1 << 2
PERM_WRITE: Final = 0x1 << 1
#: A topic others may be created from (TBW102 when autoCreateTopicEnable).
PERM_INHERIT: Final = 0x1


def is_readable(perm: int) -> bool:
    return perm & PERM_READ == PERM_READ


def is_writeable(perm: int) -> bool:
    return perm & PERM_WRITE == PERM_WRITE


def is_inherited(perm: int) -> bool:
    return perm & PERM_INHERIT == PERM_INHERIT


def perm_to_string(perm: int) -> str:
    """RocketMQ's ``perm2String``: ``"RW-"`` for read and write, ``"R-X"`` for read and
    inherit."""
    return (
        ("R" if is_readable(perm) else "-")
        + ("W" if is_writeable(perm) else "-")
        + ("X" if is_inherited(perm) else "-")
    )
