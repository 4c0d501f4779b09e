"""What a producer refuses before any request: sends to the system topics only the broker
writes (RocketMQ's client Validators.checkMessage does the same)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import pytest

from orbitmq.client import MQClientError, Producer
from orbitmq.common import Message
from orbitmq.common.topic import NOT_ALLOWED_SEND_TOPICS


@pytest.fixture
def refusing_addr() -> Iterator[str]:
    """An address nothing listens on: a request that reached the network would fail with
    "connection refused", not with the refusal under test."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
async def producer(refusing_addr: str) -> AsyncIterator[Producer]:
    async with Producer("pg", namesrv_addr=refusing_addr) as started:
        yield started


@pytest.mark.parametrize("topic", sorted(NOT_ALLOWED_SEND_TOPICS))
async def test_a_send_to_a_broker_written_topic_is_refused_locally(
    producer: Producer, topic: str
) -> None:
    expected = f"Sending message to topic[{topic}] is forbidden. Only the broker writes"
    sends: list[Callable[[], Awaitable[object]]] = [
        lambda: producer.send(Message(topic, b"x")),
        lambda: producer.send([Message(topic, b"x"), Message(topic, b"y")]),
        lambda: producer.send_oneway(Message(topic, b"x")),
    ]
    for send in sends:
        with pytest.raises(MQClientError) as caught:
            await send()
        assert str(caught.value).startswith(expected)
