"""A thousand connections held open at once against one broker, each answered."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import Iterator

import pytest

from orbitmq.broker import BrokerController
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import GetMaxOffsetRequestHeader
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import send, send_header, send_request, sent_header
from tests.component.remoting.support import RawConnection
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(60)

CONNECTIONS = 1_000
TOPIC = "TopicMany"
#: Both ends of every connection live in this process, plus the store's files and slack.
NEEDED_FDS = 2 * CONNECTIONS + 200


@pytest.fixture
def enough_file_descriptors() -> Iterator[None]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < NEEDED_FDS:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is below the {NEEDED_FDS} this test needs")
    raised = soft != resource.RLIM_INFINITY and soft < NEEDED_FDS
    if raised:
        resource.setrlimit(resource.RLIMIT_NOFILE, (NEEDED_FDS, hard))
    yield
    if raised:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def max_offset_request() -> RemotingCommand:
    header = GetMaxOffsetRequestHeader(topic=TOPIC, queue_id=0)
    return RemotingCommand.create_request(RequestCode.GET_MAX_OFFSET, header.to_ext_fields())


async def test_thousand_concurrent_connections(
    enough_file_descriptors: None, broker: BrokerController, client: RemotingClient
) -> None:
    sent_header(
        await send(
            client,
            broker,
            send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), b"one"),
        )
    )
    assert await asyncio.to_thread(broker.message_store.wait_for_dispatch, 10.0)

    # Connect in waves no larger than the listen backlog, so no SYN waits for a retry.
    opening = asyncio.Semaphore(100)

    async def connect() -> RawConnection:
        async with opening:
            return await RawConnection.open("127.0.0.1", broker.port)

    connections: list[RawConnection] = []
    try:
        async with asyncio.timeout(30):
            connections = list(await asyncio.gather(*(connect() for _ in range(CONNECTIONS))))
        assert len(broker.remoting_server.channels) >= CONNECTIONS

        async def ask(connection: RawConnection) -> RemotingCommand:
            request = max_offset_request()
            await connection.send(request)
            response = await connection.read_command()
            assert response.opaque == request.opaque
            return response

        async with asyncio.timeout(30):
            responses = await asyncio.gather(*(ask(c) for c in connections))
        assert [r.code for r in responses] == [ResponseCode.SUCCESS] * CONNECTIONS
        assert {r.ext_fields["offset"] for r in responses} == {"1"}
    finally:
        await asyncio.gather(*(c.close() for c in connections))

    # Every one of them is gone on the broker's side, and it still answers.
    await eventually_async(lambda: len(broker.remoting_server.channels) <= 1, 10, 0.05)
    response = await send(client, broker, max_offset_request())
    assert response.code == ResponseCode.SUCCESS
    assert response.ext_fields["offset"] == "1"
