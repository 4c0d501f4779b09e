"""OrbitMQ's own Python client and the official C++ client 2.1.0 against one ``orbitmq
start``: what one produces, the other consumes, both ways, with bodies, tags, keys and
properties intact."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from orbitmq.client import ConsumeContext, Producer, PushConsumer, PushConsumerConfig
from orbitmq.common import Message, MessageExt
from orbitmq.protocol import ConsumeFromWhere
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import expected, expected_all, received

pytestmark = pytest.mark.timeout(600)

COUNT = 10


async def python_produce(orbitmq: OrbitMQ, topic: str) -> list[str]:
    """Message i as ``clients/cpp_producer.py`` would send it, sent by OrbitMQ's Producer."""
    ids = []
    async with Producer("py-pg", namesrv_addr=orbitmq.namesrv) as producer:
        for i in range(COUNT):
            body, tag, keys, seq = expected(i)
            msg = Message(topic, body.encode(), properties={"seq": seq})
            msg.tags = tag
            msg.keys = keys
            ids.append((await producer.send(msg)).msg_id)
    return ids


async def python_consume(orbitmq: OrbitMQ, topic: str, group: str) -> list[MessageExt]:
    got: dict[str, MessageExt] = {}
    done = asyncio.Event()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        for m in messages:
            got[m.unique_key or ""] = m
        if len(got) >= COUNT:
            done.set()

    consumer = PushConsumer(
        group,
        namesrv_addr=orbitmq.namesrv,
        config=PushConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET),
    )
    consumer.subscribe(topic)
    consumer.register_listener(on_messages)
    await consumer.start()
    try:
        async with asyncio.timeout(30):
            await done.wait()
    finally:
        await consumer.shutdown()
    return list(got.values())


def test_python_producer_to_cpp_consumer(orbitmq: OrbitMQ, cpp_cvs: ClientRunner) -> None:
    topic = "PyToCppTopic"
    ids = asyncio.run(python_produce(orbitmq, topic))

    lines: list[dict[str, Any]] = cpp_cvs.run(
        "cpp_push_consumer.py", orbitmq.namesrv, topic, "py-to-cpp-cg", COUNT, 30
    )

    assert sorted(received(r) for r in lines) == expected_all(COUNT)
    assert {r["msg_id"] for r in lines} == set(ids)


def test_cpp_producer_to_python_consumer(orbitmq: OrbitMQ, cpp_cvs: ClientRunner) -> None:
    topic = "CppToPyTopic"
    sent = cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, topic, "cpp-to-py-pg", COUNT)

    messages = asyncio.run(python_consume(orbitmq, topic, "cpp-to-py-cg"))

    seen = sorted(
        (m.body.decode(), m.tags or "", " ".join(m.keys), m.properties.get("seq", ""))
        for m in messages
    )
    assert seen == expected_all(COUNT)
    assert {m.unique_key for m in messages} == {r["msg_id"] for r in sent}
