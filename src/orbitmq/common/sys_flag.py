"""Bits of a stored message's SYSFLAG field (RocketMQ's ``MessageSysFlag``)."""

from __future__ import annotations

from typing import Final

COMPRESSED_FLAG: Final = 0x1
MULTI_TAGS_FLAG: Final = 0x1 << 1
TRANSACTION_NOT_TYPE: Final = 0
TRANSACTION_PREPARED_TYPE: Final = 0x1 << 2
TRANSACTION_COMMIT_TYPE: Final = 0x2 << 2
TRANSACTION_ROLLBACK_TYPE: Final = 0x3 << 2
BORNHOST_V6_FLAG: Final = 0x1 << 4
STOREHOSTADDRESS_V6_FLAG: Final = 0x1 << 5
NEED_UNWRAP_FLAG: Final = 0x1 << 6
INNER_BATCH_FLAG: Final = 0x1 << 7


def transaction_value(sys_flag: int) -> int:
    """The transaction type bits (one of the ``TRANSACTION_*`` values)."""
    return sys_flag & TRANSACTION_ROLLBACK_TYPE
