"""MessageFilter: how a read decides which messages a subscription wants."""

from __future__ import annotations

from typing import Protocol


class MessageFilter(Protocol):
    """Decides per message, first from the consume-queue tag code (no commit log read),
    then, for what passes, from the stored record itself."""

    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...

    def is_matched_by_commit_log(self, record: memoryview) -> bool: ...
