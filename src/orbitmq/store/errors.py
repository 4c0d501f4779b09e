"""Store exceptions: corruption and misuse only; expected outcomes are status enums."""

from __future__ import annotations

from orbitmq.common.errors import OrbitError


class StoreError(OrbitError):
    """The store's files are not in a state it can work with (sizes, names, layout)."""
