"""Remoting errors: what a request over the network can fail with besides an answer.

A response code is an answer, not an error here; the client layer maps codes to exceptions.
These are the failures that leave no response: no connection, a lost write, no answer in time.
Each carries the flags that drive retries (DESIGN.md "Errors"): ``retriable`` says another
attempt may succeed, ``refresh_route`` says the caller should fetch the topic route again
before retrying (the peer may be gone).
"""

from __future__ import annotations

from orbitmq.common.errors import OrbitError


class RemotingError(OrbitError):
    """Root of the transport's errors. Class defaults for the flags; an instance may override
    them (``RemotingSendRequestError(..., retriable=False)``)."""

    retriable: bool = True
    refresh_route: bool = False

    def __init__(
        self,
        message: str,
        *,
        retriable: bool | None = None,
        refresh_route: bool | None = None,
    ) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable
        if refresh_route is not None:
            self.refresh_route = refresh_route


class RemotingConnectError(RemotingError):
    """No connection to the address, or the connection was lost while a request waited.

    RocketMQ's text: ``connect to <addr> failed``. The peer may be down: retry elsewhere
    after refreshing the route."""

    retriable = True
    refresh_route = True


class RemotingSendRequestError(RemotingError):
    """The request could not be written (the connection was closing or closed). The client
    closes that connection; the next attempt opens a new one."""

    retriable = True
    refresh_route = True


class RemotingTimeoutError(RemotingError):
    """The request was written but no response came in time. The peer is alive but slow
    (or the request is lost): retriable, and the route is still good.

    RocketMQ's text: ``wait response on the channel <addr> timeout, <ms>(ms)``."""

    retriable = True
    refresh_route = False


def connect_failure_cause(error: OSError, connect_timeout_s: float) -> str:
    """Why a connect failed, in words an operator acts on ("connection refused": nothing
    listens there; "timed out": the host drops packets or is down), not the event loop's
    wording, which differs between asyncio and uvloop."""
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, TimeoutError):
        return f"timed out after {round(connect_timeout_s * 1000)} ms"
    return error.strerror or str(error) or type(error).__name__


class RequestRefusedError(OrbitError):
    """Raised by a server's ``RPCHook`` to refuse a request (an ACL check that fails): the
    processor table answers SYSTEM_ERROR with ``remark``, as RocketMQ answers an exception
    from its hooks, and the request goes no further."""

    def __init__(self, remark: str) -> None:
        super().__init__(remark)
        self.remark = remark
