"""The official C++ client 2.1.0 (``rocketmq-python-cvs==2.1.0.3``), unchanged, against
``orbitmq start``: send_sync, then the messages read back through OrbitMQ's own protocol, then
a clustering PushConsumer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orbitmq.common import MessageExt, decode_messages
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode, TopicRouteData
from orbitmq.protocol.header import QueryMessageRequestHeader
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.component.broker.conftest import pull_request

# The first run makes the client's virtualenv (a pip install) inside the first test's time.
pytestmark = pytest.mark.timeout(600)

TOPIC = "CppCvsTopic"
COUNT = 10


def expected(i: int) -> tuple[str, str, str]:
    """Body, tag and keys of message ``i`` as ``clients/cpp_producer.py`` sends them."""
    return f"body-{i}", f"tag-{i % 2}", f"key-{i}"


EXPECTED = sorted(expected(i) for i in range(COUNT))


@pytest.fixture(scope="module")
def sent(orbitmq: OrbitMQ, cpp_cvs: ClientRunner) -> list[dict[str, Any]]:
    """The producer's SendResults, one per message, in sending order."""
    return cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, TOPIC, "cpp-pg", COUNT, timeout_s=60)


def test_send_sync_is_acknowledged(sent: list[dict[str, Any]]) -> None:
    assert [r["status"] for r in sent] == ["OK"] * COUNT  # SendStatus.OK is SEND_OK
    assert len({r["msg_id"] for r in sent}) == COUNT
    assert all(r["offset"] >= 0 for r in sent)


async def read_back(
    orbitmq: OrbitMQ, topic: str = TOPIC
) -> tuple[list[MessageExt], dict[str, list[MessageExt]]]:
    """Every message of ``topic`` pulled from each queue, and each key's QUERY_MESSAGE answer."""
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        route = await client.invoke(
            orbitmq.namesrv,
            RemotingCommand.create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}),
            5.0,
        )
        assert route.code == ResponseCode.SUCCESS, route.remark
        [queue_data] = TopicRouteData.from_json(route.body).queue_datas
        pulled: list[MessageExt] = []
        for queue_id in range(queue_data.read_queue_nums):
            response = await client.invoke(orbitmq.broker, pull_request(topic, queue_id), 5.0)
            if response.code == ResponseCode.SUCCESS:
                pulled.extend(decode_messages(response.body))
        by_key: dict[str, list[MessageExt]] = {}
        async with asyncio.timeout(10):  # the key index follows the commit log closely
            for i in range(COUNT):
                key = expected(i)[2]
                while not by_key.get(key):
                    by_key[key] = await query(client, orbitmq.broker, key, topic)
                    if not by_key[key]:
                        await asyncio.sleep(0.05)
        return pulled, by_key
    finally:
        await client.close()


async def query(
    client: RemotingClient, broker: str, key: str, topic: str = TOPIC
) -> list[MessageExt]:
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=32, begin_timestamp=0, end_timestamp=2**62
    )
    request = RemotingCommand.create_request(RequestCode.QUERY_MESSAGE, header.to_ext_fields())
    response = await client.invoke(broker, request, 5.0)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return []
    assert response.code == ResponseCode.SUCCESS, response.remark
    return decode_messages(response.body)


def seen(m: MessageExt) -> tuple[str, str, str]:
    return m.body.decode(), m.tags or "", " ".join(m.keys)


def check_read_back(orbitmq: OrbitMQ, sent: list[dict[str, Any]], topic: str) -> None:
    """Every sent message, pulled and found by key, is what the producer sent and where it
    was told it went. Shared by the compat tests of every client."""
    pulled, by_key = asyncio.run(read_back(orbitmq, topic))
    assert sorted(seen(m) for m in pulled) == EXPECTED
    assert all(m.topic == topic for m in pulled)
    # The client's msg_id is the unique key it set; the queue offset is the one it was told.
    by_id = {m.unique_key: m for m in pulled}
    assert sorted(by_id) == sorted(r["msg_id"] for r in sent)
    for i, result in enumerate(sent):
        message = by_id[result["msg_id"]]
        assert seen(message) == expected(i)
        assert message.queue_offset == result["offset"]
    for i in range(COUNT):
        [found] = by_key[expected(i)[2]]
        assert seen(found) == expected(i)
        assert found.unique_key == sent[i]["msg_id"]


def test_sent_messages_read_back_through_orbitmq(
    orbitmq: OrbitMQ, sent: list[dict[str, Any]]
) -> None:
    check_read_back(orbitmq, sent, TOPIC)


def test_push_consumer_clustering_receives_every_message(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner, sent: list[dict[str, Any]]
) -> None:
    # The consumer ends itself with os._exit once it has COUNT distinct messages (or exits 3
    # after 30 s): PushConsumer.shutdown() segfaults inside the client library.
    received = cpp_cvs.run(
        "cpp_push_consumer.py", orbitmq.namesrv, TOPIC, "cpp-cg", COUNT, 30, timeout_s=60
    )

    assert sorted((r["body"], r["tags"], r["keys"]) for r in received) == EXPECTED
    assert {r["msg_id"] for r in received} == {r["msg_id"] for r in sent}
    assert all(r["topic"] == TOPIC and r["reconsume_times"] == 0 for r in received)
