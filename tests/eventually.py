"""Waiting in tests without fixed sleeps.

``eventually`` polls a condition until it holds and returns its value; ``stays`` polls one for
a whole duration and fails the moment it breaks, which turns "sleep, then assert nothing
happened" into a named wait. Each has an async twin for asyncio tests that yields to the loop
between polls. On failure they name what was awaited and the condition's last value.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar, overload

T = TypeVar("T")

#: Long enough for a loaded 2-core machine; a test passes as soon as its condition holds.
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_INTERVAL_S = 0.02


def eventually(
    condition: Callable[[], T | None],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
    *,
    what: str | None = None,
) -> T:
    """Call ``condition`` until it returns something truthy, and return that (so never None);
    fail with an AssertionError after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(_timed_out(condition, what, value, timeout_s))
        time.sleep(interval_s)


@overload
async def eventually_async(
    condition: Callable[[], Awaitable[T | None]],
    timeout_s: float = ...,
    interval_s: float = ...,
    *,
    what: str | None = ...,
) -> T: ...


@overload
async def eventually_async(
    condition: Callable[[], T | None],
    timeout_s: float = ...,
    interval_s: float = ...,
    *,
    what: str | None = ...,
) -> T: ...


async def eventually_async(
    condition: Callable[[], object],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    interval_s: float = DEFAULT_INTERVAL_S,
    *,
    what: str | None = None,
) -> object:
    """``eventually`` in a coroutine: ``condition`` may be a plain function or an async one
    (a probe that asks a server), and the loop runs other tasks between polls."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    value: object = None
    while True:
        try:
            # A probe that hangs (a request with no answer) is bounded by the same deadline.
            async with asyncio.timeout_at(deadline):
                value = await _value_of(condition)
        except TimeoutError:
            raise AssertionError(_timed_out(condition, what, value, timeout_s)) from None
        if value:
            return value
        if loop.time() >= deadline:
            raise AssertionError(_timed_out(condition, what, value, timeout_s))
        await asyncio.sleep(interval_s)


def stays(
    condition: Callable[[], object],
    duration_s: float,
    interval_s: float = DEFAULT_INTERVAL_S,
    *,
    what: str | None = None,
) -> None:
    """Check ``condition`` for ``duration_s``; fail the first time it is falsy."""
    start = time.monotonic()
    while True:
        value = condition()
        elapsed = time.monotonic() - start
        if not value:
            raise AssertionError(_broke(condition, what, value, elapsed, duration_s))
        if elapsed >= duration_s:
            return
        time.sleep(interval_s)


async def stays_async(
    condition: Callable[[], object],
    duration_s: float,
    interval_s: float = DEFAULT_INTERVAL_S,
    *,
    what: str | None = None,
) -> None:
    """``stays`` in a coroutine: the loop runs other tasks (the ones that must not act)
    between checks."""
    loop = asyncio.get_running_loop()
    start = loop.time()
    while True:
        value = await _value_of(condition)
        elapsed = loop.time() - start
        if not value:
            raise AssertionError(_broke(condition, what, value, elapsed, duration_s))
        if elapsed >= duration_s:
            return
        await asyncio.sleep(interval_s)


async def _value_of(condition: Callable[[], object]) -> object:
    value = condition()
    if inspect.isawaitable(value):
        return await value
    return value


def _timed_out(condition: Callable[[], object], what: str | None, last: object, s: float) -> str:
    return f"waited {s} s for {what or _describe(condition)}; its last value: {last!r}"


def _broke(
    condition: Callable[[], object], what: str | None, value: object, elapsed: float, s: float
) -> str:
    return (
        f"{what or _describe(condition)} had to hold for {s} s but was {value!r} "
        f"after {elapsed:.2f} s"
    )


def _describe(condition: Callable[[], object]) -> str:
    """A lambda by its source line, a function by its name."""
    name = getattr(condition, "__qualname__", repr(condition))
    if "<lambda>" in name:
        try:
            return inspect.getsource(condition).strip()
        except (OSError, TypeError):
            pass
    return str(name)
