"""The asyncio counterpart of the Service base: a job run on an interval by a task, and the
stop of such a task."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)


async def run_every(
    interval_s: float | Callable[[], float],
    job: Callable[[], Awaitable[object] | object],
    description: str,
) -> None:
    """Run ``job`` every ``interval_s`` (a number, or read before each wait) until cancelled.

    A job that raises is logged under ``description`` and run again next time: a periodic
    duty (expiry scans, persistence) must outlive one bad round.
    """
    while True:
        await asyncio.sleep(interval_s() if callable(interval_s) else interval_s)
        try:
            outcome = job()
            if inspect.isawaitable(outcome):
                await outcome
        except Exception:
            log.exception("%s failed", description)


async def cancel_and_wait(task: asyncio.Task[None] | None) -> None:
    """Cancel ``task`` (None: nothing runs) and wait until it has ended, so that a stopped
    service's job is not half way through a round when its owner goes on."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
