"""A cold pull does not run on the event loop (issue 20 §4): while its read is held on a
thread, the same broker answers sends and hot pulls; released, it answers the right data."""

from __future__ import annotations

import asyncio
import threading

import pytest

from orbitmq.broker import BrokerController
from orbitmq.common import decode_messages
from orbitmq.protocol import RequestCode, ResponseCode
from orbitmq.remoting import RemotingClient
from orbitmq.store import message_reader
from orbitmq.store.mapped_file import MappedFile
from tests.component.broker.conftest import (
    BrokerFactory,
    pull_request,
    send,
    send_header,
    send_request,
    sent_header,
)
from tests.eventually import eventually_async

TOPIC = "ColdTopic"
#: With a pretend RAM of 100 KiB, accessMessageInMemoryMaxRatio 40 lets the last 40 KiB of
#: the commit log count as in memory; the first of 100 1 KB messages are beyond it.
PRETEND_RAM_BYTES = 100 * 1024


async def _send(client: RemotingClient, broker: BrokerController, body: bytes) -> int:
    request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), body)
    return sent_header(await send(client, broker, request)).queue_offset


@pytest.fixture
def pretend_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_reader, "TOTAL_PHYSICAL_MEMORY", PRETEND_RAM_BYTES)


@pytest.mark.usefixtures("pretend_ram")
async def test_a_held_cold_pull_stalls_no_send_and_no_hot_pull(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory()
    for i in range(100):
        await _send(client, broker, f"m{i}:".encode().ljust(1000, b"."))
    await eventually_async(
        lambda: broker.message_store.get_max_offset_in_queue(TOPIC, 0) == 100 or None
    )
    cold_reader = broker.pull_message_processor.cold_reader
    entered = threading.Event()
    release = threading.Event()

    def held_read(mapped: MappedFile, position: int, size: int) -> bytes:
        entered.set()
        release.wait(20)
        return mapped.read(position, size)

    cold_reader.read_file = held_read  # the seam: the read a cold pull makes on its thread
    try:
        cold = asyncio.ensure_future(
            client.invoke(broker.address, pull_request(TOPIC, offset=0), 30)
        )
        await eventually_async(lambda: entered.is_set() or None, what="the cold read began")
        # The loop is free: a send is stored and a pull at the head answered meanwhile.
        assert await _send(client, broker, b"new") == 100
        hot = await client.invoke(broker.address, pull_request(TOPIC, offset=95), 5)
        assert hot.code == ResponseCode.SUCCESS
        assert [m.body[:3] for m in decode_messages(hot.body)][-1] == b"new"
        assert not cold.done()
    finally:
        release.set()
    response = await cold
    assert response.code == ResponseCode.SUCCESS
    got = decode_messages(response.body)
    assert [m.queue_offset for m in got] == list(range(8))  # the on-disk limit: 8
    assert [m.body.split(b":")[0] for m in got] == [f"m{i}".encode() for i in range(8)]
    assert cold_reader.loaded_count == 1


@pytest.mark.usefixtures("pretend_ram")
async def test_the_cold_readers_threads_end_with_the_broker(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory()
    for i in range(100):
        await _send(client, broker, f"m{i}:".encode().ljust(1000, b"."))
    await eventually_async(
        lambda: broker.message_store.get_max_offset_in_queue(TOPIC, 0) == 100 or None
    )
    response = await client.invoke(broker.address, pull_request(TOPIC, offset=0), 30)
    assert response.code == ResponseCode.SUCCESS
    assert broker.pull_message_processor.cold_reader.loaded_count == 1

    def cold_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("ColdRead")]

    assert cold_threads()
    await broker.stop()
    await eventually_async(lambda: not cold_threads() or None, what="the cold read threads end")
