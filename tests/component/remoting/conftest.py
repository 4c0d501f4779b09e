"""Remoting over real sockets on 127.0.0.1, port 0: a server and a client per test, and every
test run on both asyncio's loop and uvloop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import pytest
import uvloop

from orbitmq.remoting import RemotingClient, RemotingServer
from tests.component.remoting.support import RawConnection

ServerFactory = Callable[..., Awaitable[RemotingServer]]
RawFactory = Callable[[RemotingServer], Awaitable[RawConnection]]


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    return {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}


@pytest.fixture(autouse=True)
async def _loop_deadline(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    """Enforce the test's pytest-timeout limit inside the event loop as well.

    pytest-timeout interrupts with SIGALRM; under uvloop the handler runs only when the loop
    wakes up and its exception is lost, so a hung test would hang the run. Just before the
    limit this cancels every task of the loop, which fails the test on either loop."""
    marker = request.node.get_closest_marker("timeout")
    limit = (
        float(marker.args[0]) if marker and marker.args else float(request.config.getini("timeout"))
    )
    loop = asyncio.get_running_loop()

    def expire() -> None:
        for task in asyncio.all_tasks(loop):
            task.cancel(f"the test ran past its {limit:g} s timeout")

    handle = loop.call_later(limit * 0.9, expire) if limit > 0 else None
    yield
    if handle is not None:
        handle.cancel()


@pytest.fixture
async def server_factory() -> AsyncIterator[ServerFactory]:
    """Start servers on 127.0.0.1:0 (keyword arguments go to RemotingServer, a ``setup``
    callable may register processors before start); all are stopped at the end."""
    servers: list[RemotingServer] = []

    async def factory(
        setup: Callable[[RemotingServer], None] | None = None, **kwargs: Any
    ) -> RemotingServer:
        kwargs.setdefault("port", 0)
        server = RemotingServer("127.0.0.1", **kwargs)
        if setup is not None:
            setup(server)
        await server.start()
        servers.append(server)
        return server

    yield factory
    for server in servers:
        await server.stop(grace_s=0.1)


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    remoting_client = RemotingClient(connect_timeout_s=2.0)
    yield remoting_client
    await remoting_client.close()


@pytest.fixture
async def raw_factory() -> AsyncIterator[RawFactory]:
    """Plain stream connections to a server, for bytes no RemotingClient would send."""
    made: list[RawConnection] = []

    async def factory(server: RemotingServer) -> RawConnection:
        connection = await RawConnection.open("127.0.0.1", server.port)
        made.append(connection)
        return connection

    yield factory
    for connection in made:
        await connection.close()
