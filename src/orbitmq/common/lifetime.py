"""``Lifetime`` and ``AsyncLifetime``: the ``with`` and ``async with`` statements over an
object's start and stop."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class Lifetime(ABC):
    """A context manager that starts its object on entry and stops it on exit. Subclasses
    say what starting (``start``) and stopping (``_stop``, idempotent) mean; this class owns
    no state and adds no locking of its own."""

    @abstractmethod
    def start(self) -> None: ...

    @abstractmethod
    def _stop(self) -> None:
        """Stop; called on exit, and after a ``start`` that raised."""

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            # ``with`` does not call __exit__ when __enter__ raises: stop what started.
            self._stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop()


class AsyncLifetime(ABC):
    """``async with``: awaits ``start`` on entry and ``_stop`` on exit. A ``start`` that
    raises must undo its own work, as ``async with`` calls no ``__aexit__`` then. Owns no
    state."""

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def _stop(self) -> None:
        """Stop; called on exit."""

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stop()
