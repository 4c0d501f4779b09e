"""One blocking ``QueueReader`` per name server address and process, reused by every task a
Python worker runs (Spark keeps its Python workers between tasks): connections and routes
survive from one partition to the next instead of being made per task.

A module-level table is the point here: Spark gives a task no place to keep state between
tasks but the worker process itself. Readers are daemon-threaded and are closed at exit.
"""

from __future__ import annotations

import atexit
import threading

from orbitmq.sync import QueueReader

_lock = threading.Lock()
_readers: dict[str, QueueReader] = {}


def reader_for(namesrv_addr: str) -> QueueReader:
    """This process's reader for ``namesrv_addr``, made on first use."""
    with _lock:
        reader = _readers.get(namesrv_addr)
        if reader is None:
            reader = _readers[namesrv_addr] = QueueReader(namesrv_addr)
        return reader


def discard(namesrv_addr: str) -> None:
    """Drop (and shut down) the reader of ``namesrv_addr``: after a failure that may have
    left its connections in a bad state, the next task starts afresh."""
    with _lock:
        reader = _readers.pop(namesrv_addr, None)
    if reader is not None:
        reader.shutdown()


@atexit.register
def _close_all() -> None:
    with _lock:
        readers = list(_readers.values())
        _readers.clear()
    for reader in readers:
        reader.shutdown()
