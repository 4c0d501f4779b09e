"""Event-loop selection: uvloop when it is importable, asyncio's own loop otherwise."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop if uvloop is installed, else a standard one: the loop factory for
    ``asyncio.Runner`` and servers' entry points."""
    try:
        import uvloop  # noqa: PLC0415 - optional dependency (absent on Windows)
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def run(main: Coroutine[Any, Any, T], *, debug: bool | None = None) -> T:
    """``asyncio.run`` on the loop ``new_event_loop`` picks."""
    with asyncio.Runner(debug=debug, loop_factory=new_event_loop) as runner:
        return runner.run(main)


def install_uvloop() -> bool:
    """Make uvloop the default event-loop policy for code that calls ``asyncio.run`` itself
    (policies are deprecated from Python 3.12 on: prefer ``run``). True if installed."""
    try:
        import uvloop  # noqa: PLC0415 - optional dependency
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True
