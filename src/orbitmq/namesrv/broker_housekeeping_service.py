"""``BrokerHousekeepingService``: a closed broker connection takes its routes with it
(RocketMQ's ``BrokerHousekeepingService``)."""

from __future__ import annotations

from orbitmq.namesrv.route_info_manager import RouteInfoManager
from orbitmq.remoting import ChannelContext, ChannelEventListener


class BrokerHousekeepingService(ChannelEventListener):
    """Hears the name server's connection events; on close, exception or idle it forgets
    the broker that registered over that connection. Owns nothing; the manager it calls is
    thread-safe. Called on the event loop, one event at a time."""

    def __init__(self, routes: RouteInfoManager) -> None:
        self._routes = routes

    def on_close(self, ctx: ChannelContext) -> None:
        self._routes.on_channel_destroy(ctx.remote_address, ctx)

    def on_exception(self, ctx: ChannelContext, error: BaseException) -> None:
        self._routes.on_channel_destroy(ctx.remote_address, ctx)

    def on_idle(self, ctx: ChannelContext) -> None:
        self._routes.on_channel_destroy(ctx.remote_address, ctx)
