"""CodeDispatchingProcessor: one RequestProcessor answering several codes, each by a handler."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from orbitmq.protocol.remoting_command import RemotingCommand
from orbitmq.remoting.channel_context import ChannelContext

#: Answers one request code; RocketMQ's processors switch on the code the same way.
Handler = Callable[[ChannelContext, RemotingCommand], Awaitable[RemotingCommand | None]]


class CodeDispatchingProcessor:
    """Owns a table from request code to handler. Registered once per code in a server's
    processor table (see ``codes``); safe from several tasks (the table never changes)."""

    def __init__(self, handlers: Mapping[int, Handler]):
        self._handlers = dict(handlers)

    @property
    def codes(self) -> list[int]:
        """The request codes this processor answers."""
        return list(self._handlers)

    def reject_request(self) -> bool:
        return False

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        return await self._handlers[request.code](ctx, request)
