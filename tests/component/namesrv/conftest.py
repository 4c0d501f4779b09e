"""A real NamesrvController on 127.0.0.1 port 0, and a RemotingClient to talk to it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from orbitmq.namesrv import NamesrvConfig, NamesrvController
from orbitmq.remoting import ChannelContext, ChannelEventListener, RemotingClient
from orbitmq.testing import ManualClock

ControllerFactory = Callable[..., Awaitable[NamesrvController]]


class CloseWatcher(ChannelEventListener):
    """Sets an event for each closed connection; added after the housekeeping listener, so
    when it fires the routes are already cleared."""

    def __init__(self) -> None:
        self.closed: asyncio.Queue[ChannelContext] = asyncio.Queue()

    def on_close(self, ctx: ChannelContext) -> None:
        self.closed.put_nowait(ctx)


@pytest.fixture
async def controller_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[ControllerFactory]:
    made: list[NamesrvController] = []

    async def factory(
        clock: ManualClock | None = None,
        watcher: CloseWatcher | None = None,
        **settings: object,
    ) -> NamesrvController:
        kv_path = tmp_path_factory.mktemp("namesrv") / "kvConfig.json"
        config = NamesrvConfig(bind_address="127.0.0.1", listen_port=0, kv_config_path=str(kv_path))
        for key, value in settings.items():
            setattr(config, key, value)
        controller = NamesrvController(config, clock or ManualClock())
        if watcher is not None:
            controller.remoting_server.add_listener(watcher)
        await controller.start()
        made.append(controller)
        return controller

    yield factory
    for controller in made:
        await controller.stop()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    remoting_client = RemotingClient(connect_timeout_s=2.0)
    yield remoting_client
    await remoting_client.close()
