"""Counting the commit log's one-record reads (``CommitLog.get_message``) of a store's reads.

CommitLog is compiled (mypyc), so its methods cannot be replaced on an instance; the reader
(``message_reader``) takes the commit log from ``MessageStore.commit_log`` on each read, so
the count goes there, in front of the real one.
"""

from __future__ import annotations

from typing import Any

import pytest

from orbitmq.store import MessageStore
from orbitmq.store.commit_log import CommitLog


class _CountedCommitLog:
    """The store's commit log, recording the offset of every ``get_message``."""

    def __init__(self, commit_log: CommitLog, offsets: list[int]) -> None:
        self._commit_log = commit_log
        self._offsets = offsets

    def get_message(self, offset: int, size: int) -> memoryview | None:
        self._offsets.append(offset)
        return self._commit_log.get_message(offset, size)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._commit_log, name)


def count_record_reads(store: MessageStore, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The offsets ``store``'s reads look up one by one from now on (until the test ends)."""
    offsets: list[int] = []
    monkeypatch.setattr(store, "commit_log", _CountedCommitLog(store.commit_log, offsets))
    return offsets
