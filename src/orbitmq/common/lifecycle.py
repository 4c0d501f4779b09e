"""``AsyncLifecycle``: ``async with`` for the servers, which start and stop."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class AsyncLifecycle(ABC):
    """Starts on entering ``async with`` and stops on leaving it, whether or not the body
    raised. Holds no state; thread-safety is the subclass's ``start`` and ``stop``'s."""

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
