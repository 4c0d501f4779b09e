"""``ThreadedCluster``: an ``InProcessCluster`` on an event loop of its own thread, for
blocking code (Spark jobs, the ``orbitmq.sync`` clients, subprocesses) that must reach the
cluster while the calling thread waits::

    with ThreadedCluster(tmp_path) as cluster:
        spark.read.format("orbitmq").option("namesrvAddr", cluster.namesrv_addr)...
"""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from orbitmq.common import Lifetime, LoopThread
from orbitmq.remoting import new_event_loop
from orbitmq.testing.cluster import InProcessCluster

T = TypeVar("T")

#: Starting or stopping a cluster takes well under a second; this bound only catches a hang.
_LIFECYCLE_TIMEOUT_S = 60.0


class ThreadedCluster(Lifetime):
    """Owns an InProcessCluster (same arguments) and the loop thread that runs it.
    ``start``/``stop``/``call`` are for one controlling thread."""

    def __init__(self, root: Path | str, **kwargs: Any) -> None:
        self._runner = LoopThread(
            "orbitmq-test-cluster", "the test cluster", loop_factory=new_event_loop
        )
        self.cluster: InProcessCluster = self._runner.build(
            lambda: InProcessCluster(root, **kwargs), _LIFECYCLE_TIMEOUT_S
        )

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float = _LIFECYCLE_TIMEOUT_S) -> T:
        """Run ``coro`` on the cluster's loop and wait for its result."""
        return self._runner.call(coro, timeout_s)

    def messages_pulled(self, group: str, topic: str) -> dict[tuple[str, int], int]:
        """``InProcessCluster.messages_pulled``: which brokers served ``group``'s pulls."""
        return self.cluster.messages_pulled(group, topic)

    def start(self) -> None:
        self.call(self.cluster.start())

    def stop(self) -> None:
        """Stop the cluster, then the loop, and join the thread."""
        self._runner.close(self.cluster.stop(), _LIFECYCLE_TIMEOUT_S)

    def _stop(self) -> None:
        self.stop()
