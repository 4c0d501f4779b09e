"""Requests and responses over a real socket: opaques, serialize types, oneway, concurrency."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode, SerializeType
from orbitmq.remoting import ChannelContext, RemotingClient, RemotingServer
from tests.component.remoting.conftest import RawFactory, ServerFactory
from tests.component.remoting.support import FuncProcessor, echo_processor

pytestmark = pytest.mark.timeout(10)


def _addr(server: RemotingServer) -> str:
    return f"127.0.0.1:{server.port}"


def _with_echo(server: RemotingServer) -> None:
    server.table.register_processor(RequestCode.HEART_BEAT, echo_processor())


@pytest.mark.parametrize("serialize_type", list(SerializeType), ids=lambda t: t.name)
async def test_a_request_is_answered_in_its_serialize_type(
    server_factory: ServerFactory, client: RemotingClient, serialize_type: SerializeType
) -> None:
    server = await server_factory(_with_echo)
    request = RemotingCommand.create_request(
        RequestCode.HEART_BEAT, {"clientID": "c1", "n": "7"}, body=b"payload"
    )
    request.serialize_type = serialize_type

    response = await client.invoke(_addr(server), request, timeout_s=5)

    assert response.is_response
    assert response.code == ResponseCode.SUCCESS
    assert response.opaque == request.opaque
    assert response.serialize_type is serialize_type
    assert response.ext_fields == {"clientID": "c1", "n": "7"}
    assert response.body == b"payload"


async def test_one_connection_per_address_is_reused(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    seen: set[int] = set()

    async def record(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        seen.add(ctx.id)
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, FuncProcessor(record))
    )
    await asyncio.gather(
        *(
            client.invoke(_addr(server), RemotingCommand.create_request(RequestCode.HEART_BEAT), 5)
            for _ in range(10)
        )
    )

    assert len(seen) == 1
    assert len(server.channels) == 1
    assert client.addresses == [_addr(server)]


async def test_concurrent_requests_answered_out_of_order_keep_their_opaques(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    count = 20
    gates = {str(i): asyncio.Event() for i in range(count)}
    arrived = asyncio.Event()
    answered: list[str] = []

    waiting = 0

    async def held(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        nonlocal waiting
        name = request.ext_fields["i"]
        waiting += 1
        if waiting == count:
            arrived.set()
        await gates[name].wait()
        answered.append(name)
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS, body=name.encode())

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, FuncProcessor(held))
    )
    requests = [
        RemotingCommand.create_request(RequestCode.PULL_MESSAGE, {"i": str(i)})
        for i in range(count)
    ]
    calls = [asyncio.ensure_future(client.invoke(_addr(server), r, 5)) for r in requests]
    await arrived.wait()
    for i in reversed(range(count)):  # answer the last first
        gates[str(i)].set()
    responses = await asyncio.gather(*calls)

    assert answered == [str(i) for i in reversed(range(count))]
    for request, response in zip(requests, responses, strict=True):
        assert response.opaque == request.opaque
        assert response.body == request.ext_fields["i"].encode()


async def test_a_oneway_request_is_processed_and_never_answered(
    server_factory: ServerFactory, raw_factory: RawFactory
) -> None:
    processed = asyncio.Event()

    async def answer_anyway(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        processed.set()
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    def setup(server: RemotingServer) -> None:
        server.table.register_processor(RequestCode.UNREGISTER_CLIENT, FuncProcessor(answer_anyway))
        _with_echo(server)

    server = await server_factory(setup)
    raw = await raw_factory(server)
    oneway = RemotingCommand.create_request(RequestCode.UNREGISTER_CLIENT)
    oneway.mark_oneway()
    await raw.send(oneway)
    await processed.wait()
    # Any answer to the oneway would have been written before the ping was even sent.
    ping = RemotingCommand.create_request(RequestCode.HEART_BEAT)
    await raw.send(ping)

    first = await raw.read_command()

    assert first.opaque == ping.opaque


async def test_client_oneway_reaches_the_processor(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    received: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

    async def take(ctx: ChannelContext, request: RemotingCommand) -> None:
        received.set_result(request)

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.UNREGISTER_CLIENT, FuncProcessor(take))
    )
    request = RemotingCommand.create_request(RequestCode.UNREGISTER_CLIENT, {"clientID": "c9"})

    await client.invoke_oneway(_addr(server), request)

    got = await received
    assert got.is_oneway
    assert got.ext_fields == {"clientID": "c9"}


async def test_the_default_processor_answers_codes_without_their_own(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    def setup(server: RemotingServer) -> None:
        server.table.register_default_processor(echo_processor())

    server = await server_factory(setup)
    request = RemotingCommand.create_request(RequestCode.GET_BROKER_RUNTIME_INFO, body=b"x")

    response = await client.invoke(_addr(server), request, 5)

    assert (response.code, response.body) == (ResponseCode.SUCCESS, b"x")
    assert dict(server.table.registrations) == {}
    assert server.table.default is not None


async def test_a_processor_may_answer_later_through_the_context(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    """Long polling's shape: return None now, write the response when data arrives."""
    parked: list[tuple[ChannelContext, RemotingCommand]] = []
    parked_event = asyncio.Event()

    async def park(ctx: ChannelContext, request: RemotingCommand) -> None:
        parked.append((ctx, request))
        parked_event.set()

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, FuncProcessor(park))
    )
    request = RemotingCommand.create_request(RequestCode.PULL_MESSAGE)
    call = asyncio.ensure_future(client.invoke(_addr(server), request, 5))
    await parked_event.wait()
    ctx, held = parked[0]

    assert ctx.write(RemotingCommand.create_response(held, ResponseCode.PULL_NOT_FOUND))
    response = await call
    assert (response.code, response.opaque) == (ResponseCode.PULL_NOT_FOUND, request.opaque)
