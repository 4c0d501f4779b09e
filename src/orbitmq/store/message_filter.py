"""MessageFilter: how a read decides which messages a subscription wants."""

from __future__ import annotations

from typing import Protocol


class MessageFilter(Protocol):
    """Decides per message, first from the consume-queue tag code (no commit log read),
    then, for what passes, from the stored record itself.

    A filter may also have a ``matches_all`` attribute: True promises that both checks pass
    for every message, so a read takes a run of messages without asking per message (see
    ``matches_every_message``). It is optional so that a filter without it stays a filter;
    it is then asked about each message.
    """

    def is_matched_by_consume_queue(self, tags_code: int) -> bool: ...

    def is_matched_by_commit_log(self, record: memoryview) -> bool: ...


def matches_every_message(message_filter: MessageFilter | None) -> bool:
    """Whether a read may take every message without asking ``message_filter``: there is
    none, or its ``matches_all`` is True."""
    return message_filter is None or getattr(message_filter, "matches_all", False) is True
