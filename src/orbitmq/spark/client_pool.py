"""One blocking ``QueueReader`` and one ``AdminClient`` per name server address, and one
started ``Producer`` per (address, group), per process, reused by every task a Python worker
runs (Spark keeps its Python workers between tasks): connections and routes survive from one
task to the next instead of being made per task.

A module-level table is the point here: Spark gives a task no place to keep state between
tasks but the worker process itself. The clients' threads are daemons; they are shut down at
exit.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

from orbitmq.client import TransactionListener
from orbitmq.spark.options import Endpoint
from orbitmq.sync import AdminClient, Producer, QueueReader, TransactionProducer

C = TypeVar("C", AdminClient, Producer, QueueReader)
K = TypeVar("K", bound=Hashable)

_lock = threading.Lock()
_readers: dict[Endpoint, QueueReader] = {}
_admins: dict[Endpoint, AdminClient] = {}
_producers: dict[tuple[Endpoint, str], Producer] = {}
#: Topics this process made sure exist, per endpoint.
_ensured: set[tuple[Endpoint, str]] = set()


def _pooled(table: dict[K, C], key: K, make: Callable[[], C]) -> C:
    """``table[key]``, made and started on first use (and shut down if it cannot start)."""
    with _lock:
        client = table.get(key)
        if client is None:
            client = make()
            try:
                client.start()
            except BaseException:
                client.shutdown()
                raise
            table[key] = client
        return client


def reader_for(endpoint: Endpoint) -> QueueReader:
    """This process's reader for ``endpoint``."""
    return _pooled(_readers, endpoint, lambda: QueueReader(client_config=endpoint.client_config()))


def admin_for(endpoint: Endpoint) -> AdminClient:
    """This process's started admin client for ``endpoint``."""
    return _pooled(_admins, endpoint, lambda: AdminClient(client_config=endpoint.client_config()))


def ensure_topic(endpoint: Endpoint, topic: str) -> None:
    """Create ``topic`` (one queue) on every broker unless this process did already: for
    the sink's own topics, which must not depend on the brokers auto-creating topics."""
    if (endpoint, topic) in _ensured:
        return
    admin_for(endpoint).create_topic(topic, queue_nums=1)
    _ensured.add((endpoint, topic))


def producer_for(
    endpoint: Endpoint, group: str, checker: Callable[[], TransactionListener]
) -> Producer:
    """This process's started producer of ``group`` for ``endpoint``: a transactional
    one, whose listener (made by ``checker`` when the producer is made) answers the
    broker's checks of the group's halves while the process lives."""

    def make() -> Producer:
        return TransactionProducer(
            group, transaction_listener=checker(), client_config=endpoint.client_config()
        )

    return _pooled(_producers, (endpoint, group), make)


def discard(endpoint: Endpoint) -> None:
    """Drop (and shut down) the reader of ``endpoint``: when a query stops, or after a
    failure that may have left its connections in a bad state."""
    with _lock:
        reader = _readers.pop(endpoint, None)
    if reader is not None:
        reader.shutdown()


@atexit.register
def _close_all() -> None:
    with _lock:
        clients: list[AdminClient | Producer | QueueReader] = [
            *_readers.values(),
            *_admins.values(),
            *_producers.values(),
        ]
        _readers.clear()
        _admins.clear()
        _producers.clear()
    for client in clients:
        client.shutdown()
