"""``SendDeadline``: a send's time limit in all, and what the send is waiting for when the
limit runs out, so that its error says where it got stuck instead of a bare TimeoutError."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from types import TracebackType

from orbitmq.client.errors import SendTimeoutError


class SendDeadline:
    """Owns one send's timeout (an ``asyncio.timeout`` around the whole send: route, every
    attempt, backoffs) and a note of what the send waits for now, kept up to date by the
    producer as it moves from the name servers to a broker. Past the limit, leaving the
    ``async with`` raises SendTimeoutError naming that, the last failed attempt's error,
    and the fix. Used by the one task running the send."""

    def __init__(self, topic: str, timeout_s: float, namesrv_addresses: Sequence[str]) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        servers = " or ".join(namesrv_addresses) or "(none set)"
        # Every send starts by finding the topic's route (from the cache, mostly).
        self.what = f"the route of topic {topic} from name server {servers}"
        self.hint = "check namesrv_addr and that the name server is running"
        self.last_error: BaseException | None = None
        self._limit = asyncio.timeout(timeout_s)

    def waiting_for(self, what: str, hint: str = "") -> None:
        """The send now waits for ``what``; ``hint`` is what to check if it never comes."""
        self.what, self.hint = what, hint

    def describe(self) -> str:
        text = (
            f"send to topic {self.topic} timed out after {round(self.timeout_s * 1000)} ms"
            f" (send_msg_timeout_s) waiting for {self.what}"
        )
        if self.last_error is not None:
            text += f"; last error: {self.last_error}"
        return f"{text}; {self.hint}" if self.hint else text

    async def __aenter__(self) -> SendDeadline:
        await self._limit.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            await self._limit.__aexit__(exc_type, exc, tb)
        except TimeoutError:
            # Raised here only when this limit expired; a TimeoutError from inside the
            # send passes through unchanged.
            raise SendTimeoutError(self.describe()) from None
