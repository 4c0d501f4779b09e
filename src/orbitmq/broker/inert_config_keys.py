"""The broker.conf keys that are accepted but have no effect yet, and the one warning that
names them at start.

A RocketMQ user's broker.conf may set these keys; the broker reads them into
``BrokerConfig`` (so the file loads and ``getBrokerConfig`` reports them) but nothing acts
on them yet. Rather than refuse the file or stay silent, the broker names the ones that are
set in one warning line when it starts. docs/operations.md lists the same keys (a test keeps
the two equal); the set shrinks as the features behind them land.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from orbitmq.common.config_binding import snake_case

log = logging.getLogger(__name__)

#: broker.conf keys bound to ``BrokerConfig`` fields that nothing reads yet.
INERT_BROKER_KEYS: frozenset[str] = frozenset(
    {
        "aclEnable",
    }
)

# Keyed by field name, as config_binding matches keys, so that any spelling that sets the
# field (aclEnable or AclEnable) is recognised.
_INERT_BY_FIELD = {snake_case(key): key for key in INERT_BROKER_KEYS}


def inert_keys_among(keys: Iterable[str]) -> list[str]:
    """The inert keys among ``keys`` (the raw keys of a broker.conf), sorted, as spelt in
    ``INERT_BROKER_KEYS``."""
    return sorted(
        {_INERT_BY_FIELD[name] for name in map(snake_case, keys) if name in _INERT_BY_FIELD}
    )


def warn_inert_keys(keys: Iterable[str]) -> list[str]:
    """Log one warning naming every inert key among ``keys``, or nothing when none is set;
    the inert keys found."""
    inert = inert_keys_among(keys)
    if inert:
        log.warning(
            "broker.conf keys accepted but not in effect yet: %s; see docs/operations.md",
            ", ".join(inert),
        )
    return inert
