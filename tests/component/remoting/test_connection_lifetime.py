"""Connections: idle close, listeners, timeouts, refused and lost connections, reconnects."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from collections.abc import Iterator

import pytest

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import (
    ChannelContext,
    RemotingClient,
    RemotingConnectError,
    RemotingError,
    RemotingSendRequestError,
    RemotingServer,
    RemotingTimeoutError,
    parse_address,
)
from tests.component.remoting.conftest import ServerFactory
from tests.component.remoting.support import FuncProcessor, RecordingListener, echo_processor
from tests.support import LogRecordWaiter

pytestmark = pytest.mark.timeout(10)


def _addr(server: RemotingServer) -> str:
    return f"127.0.0.1:{server.port}"


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound but not listening: connecting to it is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


async def _never(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


async def test_an_idle_connection_is_closed_and_listeners_hear_it(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    listener = RecordingListener()
    client_side = RecordingListener()
    client.add_listener(client_side)

    def setup(server: RemotingServer) -> None:
        server.table.register_processor(RequestCode.HEART_BEAT, echo_processor())
        server.add_listener(listener)

    server = await server_factory(setup, channel_max_idle_s=0.2)
    request = RemotingCommand.create_request(RequestCode.HEART_BEAT)
    await client.invoke(_addr(server), request, 5)

    await listener.closed.wait()
    await client_side.closed.wait()

    kinds = [kind for kind, _ in listener.events]
    assert kinds == ["connect", "idle", "close"]
    assert server.channels == []
    assert client.addresses == []
    # The client reconnects for the next request.
    again = await client.invoke(_addr(server), RemotingCommand.create_request(34), 5)
    assert again.code == ResponseCode.SUCCESS


async def test_listeners_hear_connect_and_close_with_the_same_context(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    listener = RecordingListener()
    contexts: list[ChannelContext] = []

    async def remember(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        contexts.append(ctx)
        ctx.attributes["clientID"] = request.ext_fields["clientID"]
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    def setup(server: RemotingServer) -> None:
        server.table.register_processor(RequestCode.HEART_BEAT, FuncProcessor(remember))
        server.add_listener(listener)

    server = await server_factory(setup)
    request = RemotingCommand.create_request(RequestCode.HEART_BEAT, {"clientID": "c1"})
    await client.invoke(_addr(server), request, 5)
    await client.close()
    await listener.closed.wait()

    ctx = contexts[0]
    assert listener.events == [("connect", ctx.id), ("close", ctx.id)]
    assert ctx.attributes == {"clientID": "c1"}
    assert not ctx.is_active
    assert ctx.remote_socket_address[0] == "127.0.0.1"
    assert ctx.remote_address == f"127.0.0.1:{ctx.remote_socket_address[1]}"


async def test_no_answer_in_time_is_a_timeout(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, FuncProcessor(_never))
    )

    with pytest.raises(RemotingTimeoutError) as caught:
        await client.invoke(_addr(server), RemotingCommand.create_request(11), timeout_s=0.1)

    assert caught.value.retriable and not caught.value.refresh_route
    assert re.fullmatch(
        r"wait response on the channel <127\.0\.0\.1:\d+> timeout, \d+\(ms\)", str(caught.value)
    )


async def test_a_refused_connection_is_a_connect_error(
    client: RemotingClient, refusing_port: int
) -> None:
    with pytest.raises(RemotingConnectError) as caught:
        await client.invoke(f"127.0.0.1:{refusing_port}", RemotingCommand.create_request(34), 5)

    assert caught.value.retriable and caught.value.refresh_route
    assert str(caught.value).startswith(f"connect to 127.0.0.1:{refusing_port} failed")
    assert isinstance(caught.value, RemotingError)


async def test_a_lost_connection_fails_waiting_requests(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    held = asyncio.Event()

    async def hang_up(ctx: ChannelContext, request: RemotingCommand) -> None:
        if request.code == RequestCode.PULL_MESSAGE:
            held.set()
            return
        ctx.close()

    server = await server_factory(
        lambda s: s.table.register_default_processor(FuncProcessor(hang_up))
    )
    waiting = asyncio.ensure_future(
        client.invoke(_addr(server), RemotingCommand.create_request(RequestCode.PULL_MESSAGE), 5)
    )
    await held.wait()

    with pytest.raises(RemotingConnectError):
        await client.invoke(_addr(server), RemotingCommand.create_request(34), 5)
    with pytest.raises(RemotingConnectError):
        await waiting


async def test_the_client_reconnects_after_the_server_restarts(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, echo_processor())
    )
    port = server.port
    await client.invoke(_addr(server), RemotingCommand.create_request(34), 5)
    await server.stop()

    restarted = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, echo_processor()), port=port
    )
    response = await client.invoke(_addr(restarted), RemotingCommand.create_request(34), 5)

    assert response.code == ResponseCode.SUCCESS


async def test_stop_lets_requests_in_progress_answer(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    started = asyncio.Event()

    async def slow(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        started.set()
        await asyncio.sleep(0)  # yields once: still running when stop() begins
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.SEND_MESSAGE, FuncProcessor(slow))
    )
    call = asyncio.ensure_future(
        client.invoke(_addr(server), RemotingCommand.create_request(10), 5)
    )
    await started.wait()
    await server.stop(grace_s=2)

    assert (await call).code == ResponseCode.SUCCESS
    assert not server.is_serving


async def test_stop_cancels_requests_that_outlive_the_grace(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    started = asyncio.Event()
    cancelled = asyncio.Event()

    async def endless(ctx: ChannelContext, request: RemotingCommand) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, FuncProcessor(endless))
    )
    call = asyncio.ensure_future(
        client.invoke(_addr(server), RemotingCommand.create_request(11), 5)
    )
    await started.wait()

    await server.stop(grace_s=0.05)

    assert cancelled.is_set()
    with pytest.raises(RemotingConnectError):
        await call
    assert server.table.public_executor.admitted == 0


async def test_a_closed_client_refuses_requests(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, echo_processor())
    )
    await client.close()

    with pytest.raises(RemotingConnectError):
        await client.invoke(_addr(server), RemotingCommand.create_request(34), 5)


async def test_writing_to_a_closed_channel(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    server = await server_factory()
    channel = await client.get_channel(_addr(server))
    channel.close()

    assert not channel.write(RemotingCommand.create_request(34))
    with pytest.raises(RemotingSendRequestError):
        channel.invoke_oneway(RemotingCommand.create_request(34))
    with pytest.raises(RemotingSendRequestError):
        await channel.invoke(RemotingCommand.create_request(34), 1)


@pytest.mark.parametrize("addr", ["nohost", "host:", ":10911", "host:70000", "host:port"])
def test_a_bad_address_is_named(addr: str) -> None:
    with pytest.raises(RemotingConnectError, match="is not host:port") as caught:
        parse_address(addr)
    assert not caught.value.retriable


def test_addresses_parse_like_rocketmq() -> None:
    assert parse_address("10.0.0.1:9876") == ("10.0.0.1", 9876)
    assert parse_address("[::1]:9876") == ("::1", 9876)
    assert parse_address("broker-a:10911") == ("broker-a", 10911)


def _held_pull_server(arrived: asyncio.Event, release: asyncio.Event) -> FuncProcessor:
    """A PULL_MESSAGE processor that holds each request until ``release``, as a broker holds
    a long poll until a message arrives."""

    async def held(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        arrived.set()
        await release.wait()
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    return FuncProcessor(held)


async def test_an_answer_to_a_request_given_up_is_dropped_quietly(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    # A consumer shutting down cancels its long polls; the broker answers them later anyway.
    arrived, release = asyncio.Event(), asyncio.Event()
    processor = _held_pull_server(arrived, release)
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, processor)
    )
    with LogRecordWaiter("orbitmq.remoting.channel") as log:
        pull = asyncio.ensure_future(
            client.invoke(_addr(server), RemotingCommand.create_request(11), 30)
        )
        await arrived.wait()
        pull.cancel()
        with pytest.raises(asyncio.CancelledError):
            await pull
        release.set()
        await log.wait_for(lambda r: "given up before" in r.getMessage())

        assert log.at_least(logging.WARNING) == []


async def test_a_late_answer_to_a_timed_out_request_is_still_a_warning(
    server_factory: ServerFactory,
) -> None:
    arrived, release = asyncio.Event(), asyncio.Event()
    processor = _held_pull_server(arrived, release)
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, processor)
    )
    client = RemotingClient(close_socket_if_timeout=False)
    try:
        with LogRecordWaiter("orbitmq.remoting.channel") as log:
            with pytest.raises(RemotingTimeoutError):
                await client.invoke(_addr(server), RemotingCommand.create_request(11), 0.05)
            release.set()
            await log.wait_for(lambda r: r.levelno == logging.WARNING)

            assert log.at_least(logging.WARNING)[0].endswith("matches no request (timed out?)")
    finally:
        await client.close()
