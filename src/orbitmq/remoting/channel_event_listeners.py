"""``ChannelEventListeners``: the listeners of one server or client, called in turn."""

from __future__ import annotations

import logging

from orbitmq.remoting.channel_context import ChannelContext, ChannelEventListener

log = logging.getLogger(__name__)


class ChannelEventListeners(ChannelEventListener):
    """Owns an ordered list of listeners and passes every event to each, in the order they
    were added. A listener that raises is logged and skipped: one broken registry must not
    keep another from clearing a closed connection. Event-loop confined."""

    def __init__(self) -> None:
        self._listeners: list[ChannelEventListener] = []

    def add(self, listener: ChannelEventListener) -> None:
        self._listeners.append(listener)

    def remove(self, listener: ChannelEventListener) -> None:
        self._listeners.remove(listener)

    def __len__(self) -> int:
        return len(self._listeners)

    def on_connect(self, ctx: ChannelContext) -> None:
        for listener in self._listeners:
            try:
                listener.on_connect(ctx)
            except Exception:
                log.exception("channel listener %r failed on connect", listener)

    def on_close(self, ctx: ChannelContext) -> None:
        for listener in self._listeners:
            try:
                listener.on_close(ctx)
            except Exception:
                log.exception("channel listener %r failed on close", listener)

    def on_exception(self, ctx: ChannelContext, error: BaseException) -> None:
        for listener in self._listeners:
            try:
                listener.on_exception(ctx, error)
            except Exception:
                log.exception("channel listener %r failed on exception", listener)

    def on_idle(self, ctx: ChannelContext) -> None:
        for listener in self._listeners:
            try:
                listener.on_idle(ctx)
            except Exception:
                log.exception("channel listener %r failed on idle", listener)
