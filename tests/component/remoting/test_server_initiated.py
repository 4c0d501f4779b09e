"""Requests from the server to a client over the client's own connection (RocketMQ's
NOTIFY_CONSUMER_IDS_CHANGED and CHECK_TRANSACTION_STATE)."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import (
    ChannelContext,
    RemotingClient,
    RemotingConnectError,
    RemotingServer,
    RemotingTimeoutError,
)
from tests.component.remoting.conftest import ServerFactory
from tests.component.remoting.support import FuncProcessor

pytestmark = pytest.mark.timeout(10)


async def _connected_context(
    server_factory: ServerFactory, client: RemotingClient
) -> tuple[RemotingServer, ChannelContext]:
    """Start a server, heartbeat to it from ``client``, return the server's context for
    that connection."""
    loop = asyncio.get_running_loop()
    seen: asyncio.Future[ChannelContext] = loop.create_future()

    async def heartbeat(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        if not seen.done():
            seen.set_result(ctx)
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, FuncProcessor(heartbeat))
    )
    addr = f"127.0.0.1:{server.port}"
    await client.invoke(addr, RemotingCommand.create_request(RequestCode.HEART_BEAT), 5)
    return server, await seen


async def test_server_sends_oneway_and_request_over_the_client_connection(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    loop = asyncio.get_running_loop()
    notified: asyncio.Future[RemotingCommand] = loop.create_future()

    async def notify(ctx: ChannelContext, request: RemotingCommand) -> None:
        notified.set_result(request)

    async def check(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.create_response(
            request, ResponseCode.SUCCESS, ext_fields={"state": "COMMIT"}, body=request.body
        )

    client.table.register_processor(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, FuncProcessor(notify))
    client.table.register_processor(RequestCode.CHECK_TRANSACTION_STATE, FuncProcessor(check))
    _, ctx = await _connected_context(server_factory, client)

    ctx.invoke_oneway(
        RemotingCommand.create_request(
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g1"}
        )
    )
    request = RemotingCommand.create_request(RequestCode.CHECK_TRANSACTION_STATE, body=b"m1")
    response = await ctx.invoke(request, timeout_s=5)

    got = await notified
    assert got.is_oneway and got.ext_fields == {"consumerGroup": "g1"}
    assert response.opaque == request.opaque
    assert (response.code, response.ext_fields, response.body) == (
        ResponseCode.SUCCESS,
        {"state": "COMMIT"},
        b"m1",
    )


async def test_a_client_without_the_processor_answers_not_supported(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    _, ctx = await _connected_context(server_factory, client)

    response = await ctx.invoke(
        RemotingCommand.create_request(RequestCode.CHECK_TRANSACTION_STATE), 5
    )

    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 39 not supported"


async def test_server_invoke_times_out_or_fails_when_the_client_goes(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    held = asyncio.Event()

    async def hold(ctx: ChannelContext, request: RemotingCommand) -> None:
        held.set()

    client.table.register_processor(RequestCode.CHECK_TRANSACTION_STATE, FuncProcessor(hold))
    _, ctx = await _connected_context(server_factory, client)

    with pytest.raises(RemotingTimeoutError):
        await ctx.invoke(RemotingCommand.create_request(RequestCode.CHECK_TRANSACTION_STATE), 0.05)
    waiting = asyncio.ensure_future(
        ctx.invoke(RemotingCommand.create_request(RequestCode.CHECK_TRANSACTION_STATE), 5)
    )
    await held.wait()
    await client.close()
    with pytest.raises(RemotingConnectError):
        await waiting
