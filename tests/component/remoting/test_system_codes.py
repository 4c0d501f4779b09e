"""The codes only the remoting layer answers: REQUEST_CODE_NOT_SUPPORTED, SYSTEM_BUSY (rejected
or overloaded) and SYSTEM_ERROR, with RocketMQ's remarks."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest

from orbitmq.protocol import (
    MAX_FRAME_BYTES,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
)
from orbitmq.remoting import ChannelContext, RemotingClient, RemotingServer, RequestExecutor
from tests.component.remoting.conftest import RawFactory, ServerFactory
from tests.component.remoting.support import FuncProcessor, echo, echo_processor
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(10)


def _addr(server: RemotingServer) -> str:
    return f"127.0.0.1:{server.port}"


@pytest.mark.parametrize("serialize_type", list(SerializeType), ids=lambda t: t.name)
async def test_an_unknown_code_is_not_supported(
    server_factory: ServerFactory, client: RemotingClient, serialize_type: SerializeType
) -> None:
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, echo_processor())
    )
    request = RemotingCommand.create_request(9999)
    request.serialize_type = serialize_type

    response = await client.invoke(_addr(server), request, 5)

    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 9999 not supported"
    assert response.opaque == request.opaque
    assert response.serialize_type is serialize_type


async def test_a_processor_exception_is_a_system_error_with_its_text(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    async def broken(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        raise ValueError("boom in the processor")

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.SEND_MESSAGE, FuncProcessor(broken))
    )
    request = RemotingCommand.create_request(RequestCode.SEND_MESSAGE)

    response = await client.invoke(_addr(server), request, 5)

    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.opaque == request.opaque
    assert response.remark is not None
    # RocketMQ's exceptionSimpleDesc: the exception, then the frame that raised it.
    assert response.remark.startswith("ValueError: boom in the processor, broken(")
    assert response.remark.endswith(")") and "test_system_codes.py:" in response.remark
    # The connection survives for the next request.
    again = await client.invoke(_addr(server), RemotingCommand.create_request(10), 5)
    assert again.code == ResponseCode.SYSTEM_ERROR


async def test_a_full_request_queue_answers_system_busy(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    release = asyncio.Event()
    entered = 0

    async def blocked(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        nonlocal entered
        entered += 1
        await release.wait()
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    processor = FuncProcessor(blocked)
    executor = RequestExecutor("send", capacity=2)
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.SEND_MESSAGE, processor, executor)
    )
    calls = [
        asyncio.ensure_future(
            client.invoke(
                _addr(server), RemotingCommand.create_request(RequestCode.SEND_MESSAGE), 5
            )
        )
        for _ in range(5)
    ]

    first_three: list[RemotingCommand] = []
    for next_done in asyncio.as_completed(calls):
        first_three.append(await next_done)
        if len(first_three) == 3:
            break
    assert [r.code for r in first_three] == [ResponseCode.SYSTEM_BUSY] * 3
    assert {r.remark for r in first_three} == {
        "[OVERLOAD]system busy, start flow control for a while"
    }
    assert (entered, executor.admitted, executor.refused) == (2, 2, 3)

    release.set()
    responses = await asyncio.gather(*calls)
    assert sorted(r.code for r in responses) == [0, 0, 2, 2, 2]
    assert processor.calls == 2
    assert executor.admitted == 0


async def test_an_executor_bounds_concurrency_and_is_shared_between_codes(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    running = 0
    most = 0
    gate = asyncio.Event()

    async def counted(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await gate.wait()
        running -= 1
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    executor = RequestExecutor("send", capacity=10, concurrency=1)

    def setup(server: RemotingServer) -> None:
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
            server.table.register_processor(code, FuncProcessor(counted), executor)

    server = await server_factory(setup)
    calls = [
        asyncio.ensure_future(client.invoke(_addr(server), RemotingCommand.create_request(code), 5))
        for code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2) * 3
    ]
    gate.set()
    responses = await asyncio.gather(*calls)

    assert [r.code for r in responses] == [ResponseCode.SUCCESS] * 6
    assert most == 1
    assert server.table.registrations[RequestCode.SEND_MESSAGE_V2].executor is executor


async def test_a_rejecting_processor_answers_system_busy(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    processor = FuncProcessor(echo, reject=True)
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, processor)
    )
    request = RemotingCommand.create_request(RequestCode.PULL_MESSAGE)

    response = await client.invoke(_addr(server), request, 5)

    assert response.code == ResponseCode.SYSTEM_BUSY
    assert response.remark == "[REJECTREQUEST]system busy, start flow control for a while"
    assert response.opaque == request.opaque
    assert processor.calls == 0


async def test_oneway_requests_get_no_system_answers(
    server_factory: ServerFactory, raw_factory: RawFactory
) -> None:
    failed = asyncio.Event()

    async def broken(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        failed.set()
        raise RuntimeError("oneway failure")

    def setup(server: RemotingServer) -> None:
        server.table.register_processor(RequestCode.UNREGISTER_CLIENT, FuncProcessor(broken))
        server.table.register_processor(RequestCode.HEART_BEAT, echo_processor())

    server = await server_factory(setup)
    raw = await raw_factory(server)
    for code in (9999, RequestCode.UNREGISTER_CLIENT):
        oneway = RemotingCommand.create_request(code)
        oneway.mark_oneway()
        await raw.send(oneway)
    await failed.wait()
    ping = RemotingCommand.create_request(RequestCode.HEART_BEAT)
    await raw.send(ping)

    assert (await raw.read_command()).opaque == ping.opaque


async def test_a_response_too_large_for_a_frame_is_a_system_error(
    server_factory: ServerFactory, client: RemotingClient
) -> None:
    async def oversize(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        return RemotingCommand.create_response(
            request, ResponseCode.SUCCESS, body=bytes(MAX_FRAME_BYTES)
        )

    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.PULL_MESSAGE, FuncProcessor(oversize))
    )

    response = await client.invoke(_addr(server), RemotingCommand.create_request(11), 5)

    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None and "ProtocolError: a frame of" in response.remark


async def test_an_unsupported_code_warns_once_per_code_and_connection(
    server_factory: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    # A client pointed at the wrong kind of server repeats the same code: one line about it
    # per connection, not an ERROR per request.
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, echo_processor())
    )
    caplog.set_level(logging.DEBUG, logger="orbitmq.remoting.processor_table")
    first, second = RemotingClient(), RemotingClient()
    try:
        for code in (9999, 9999, 9998, 9999):
            answer = await first.invoke(_addr(server), RemotingCommand.create_request(code), 5)
            assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        answer = await second.invoke(_addr(server), RemotingCommand.create_request(9999), 5)
        assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        await first.close()
        await second.close()

    about = [r for r in caplog.records if "not supported" in r.getMessage()]
    loud = [r for r in about if r.levelno >= logging.WARNING]
    assert [r.levelno for r in loud] == [logging.WARNING] * 3
    assert sorted(r.getMessage().split(" request type ")[1][:4] for r in loud) == [
        "9998",
        "9999",
        "9999",
    ]
    assert len({r.getMessage().split(" ")[0] for r in loud}) == 2  # two connections
    assert sum(r.levelno == logging.DEBUG for r in about) == 2  # the repeats


@pytest.mark.parametrize("limit_ms", [100, None], ids=["limited", "unlimited"])
async def test_a_request_that_waited_over_its_executors_limit_is_answered_busy(
    server_factory: ServerFactory, client: RemotingClient, limit_ms: int | None
) -> None:
    # One slot: the second request waits for the first (300 ms) to finish. With a limit of
    # 100 ms it is answered [TIMEOUT_CLEAN_QUEUE] instead of run; without one, it runs.
    ran: list[int] = []

    async def slow(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        ran.append(request.opaque)
        await asyncio.sleep(0.3)
        return RemotingCommand.create_response(request, ResponseCode.SUCCESS)

    executor = RequestExecutor("pull", capacity=10, concurrency=1, max_wait_ms=lambda: limit_ms)
    server = await server_factory(
        lambda s: s.table.register_processor(
            RequestCode.PULL_MESSAGE, FuncProcessor(slow), executor
        )
    )
    requests = [RemotingCommand.create_request(RequestCode.PULL_MESSAGE) for _ in range(2)]
    first = asyncio.ensure_future(client.invoke(_addr(server), requests[0], 5))
    await eventually_async(lambda: len(ran) == 1)
    second = await client.invoke(_addr(server), requests[1], 5)

    assert (await first).code == ResponseCode.SUCCESS
    if limit_ms is None:
        assert second.code == ResponseCode.SUCCESS
        assert executor.expired == 0
        return
    assert second.code == ResponseCode.SYSTEM_BUSY
    match = re.fullmatch(
        r"\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, "
        r"period in queue: (\d+)ms, size of queue: (\d+)",
        second.remark or "",
    )
    assert match, second.remark
    assert 100 <= int(match.group(1)) < 1000
    assert ran == [requests[0].opaque]  # the expired request never reached its processor
    assert executor.expired == 1
