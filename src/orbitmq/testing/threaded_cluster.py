"""``ThreadedCluster``: an ``InProcessCluster`` on an event loop of its own thread, for
blocking code (Spark jobs, the ``orbitmq.sync`` clients, subprocesses) that must reach the
cluster while the calling thread waits::

    with ThreadedCluster(tmp_path) as cluster:
        spark.read.format("orbitmq").option("namesrvAddr", cluster.namesrv_addr)...
"""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from orbitmq.sync import LoopThread
from orbitmq.testing.cluster import InProcessCluster

T = TypeVar("T")

#: Starting or stopping a cluster takes well under a second; this bound only catches a hang.
_LIFECYCLE_TIMEOUT_S = 60.0


class ThreadedCluster:
    """Owns an InProcessCluster (same arguments) and the loop thread that runs it.
    ``start``/``stop``/``call`` are for one controlling thread."""

    def __init__(self, root: Path | str, **kwargs: Any) -> None:
        self._runner = LoopThread("orbitmq-test-cluster", "the test cluster")
        self.cluster: InProcessCluster = self.call(_build(root, kwargs))

    @property
    def namesrv_addr(self) -> str:
        return self.cluster.namesrv_addr

    def call(self, coro: Coroutine[Any, Any, T], timeout_s: float = _LIFECYCLE_TIMEOUT_S) -> T:
        """Run ``coro`` on the cluster's loop and wait for its result."""
        return self._runner.call(coro, timeout_s)

    def start(self) -> None:
        self.call(self.cluster.start())

    def stop(self) -> None:
        """Stop the cluster, then the loop, and join the thread."""
        if self._runner.closed:
            return
        try:
            self.call(self.cluster.stop())
        finally:
            self._runner.close()

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


async def _build(root: Path | str, kwargs: dict[str, Any]) -> InProcessCluster:
    # On the loop: the controllers may bind asyncio primitives to the running loop.
    return InProcessCluster(root, **kwargs)
