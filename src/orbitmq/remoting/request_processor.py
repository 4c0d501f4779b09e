"""``RequestProcessor``: the role of everything that answers request codes (RocketMQ's
``NettyRequestProcessor`` and ``AsyncNettyRequestProcessor`` in one)."""

from __future__ import annotations

from typing import Protocol

from orbitmq.protocol import RemotingCommand
from orbitmq.remoting.channel_context import ChannelContext


class RequestProcessor(Protocol):
    """Answers the request codes it is registered for in a ``ProcessorTable``.

    ``process_request`` runs as its own task, possibly concurrently with other requests from
    the same or other connections; it returns the response (the transport sets its opaque,
    response flag and serialize type from the request), or None to answer later through
    ``ctx.write`` or not at all (oneway requests are never answered). An exception becomes a
    SYSTEM_ERROR response: only the remoting layer turns failures into response codes.

    ``reject_request`` is asked before a request is queued; True answers SYSTEM_BUSY at once
    (RocketMQ's ``rejectRequest``, e.g. a broker whose page cache is busy).
    """

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None: ...

    def reject_request(self) -> bool: ...
