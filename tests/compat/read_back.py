"""What the compat tests check after a real client sent: every message read back through
OrbitMQ's own protocol — pulled from every queue, found by key (QUERY_MESSAGE), by unique id
(QUERY_MESSAGE on UNIQ_KEY) and by offset message id (VIEW_MESSAGE_BY_ID) — is what the
client sent, where the broker told the client it went.

Message ``i`` is what ``clients/cpp_producer.py`` sends: body ``body-i``, tag
``tag-{i % 2}``, keys ``key-i``, user property ``seq=i``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from orbitmq.common import MessageExt, decode_message_id, decode_messages
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode, TopicRouteData
from orbitmq.protocol.header import QueryMessageRequestHeader, ViewMessageRequestHeader
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import OrbitMQ
from tests.component.broker.conftest import pull_request

#: The key index follows the commit log closely; lookups retry for this long.
INDEX_WAIT_S = 10.0


def expected(i: int) -> tuple[str, str, str, str]:
    """Body, tag, keys and ``seq`` property of message ``i``."""
    return f"body-{i}", f"tag-{i % 2}", f"key-{i}", str(i)


def expected_all(count: int) -> list[tuple[str, str, str, str]]:
    return sorted(expected(i) for i in range(count))


def seen(m: MessageExt) -> tuple[str, str, str, str]:
    """What ``expected`` describes, as stored."""
    return m.body.decode(), m.tags or "", " ".join(m.keys), m.properties.get("seq", "")


def received(line: dict[str, Any]) -> tuple[str, str, str, str]:
    """What ``expected`` describes, as a client script printed it."""
    return line["body"], line["tags"], line["keys"], line["seq"]


@dataclass
class ReadBack:
    """One topic read back from the broker in every way a user can look a message up."""

    pulled: list[MessageExt] = field(default_factory=list)
    by_key: dict[str, list[MessageExt]] = field(default_factory=dict)
    by_unique_key: dict[str, list[MessageExt]] = field(default_factory=dict)
    by_offset_id: dict[str, MessageExt] = field(default_factory=dict)


async def read_back(orbitmq: OrbitMQ, topic: str, count: int) -> ReadBack:
    """Pull every queue of ``topic`` to its end, then look each message up three ways."""
    client = RemotingClient(connect_timeout_s=2.0)
    result = ReadBack()
    try:
        route = await client.invoke(
            orbitmq.namesrv,
            RemotingCommand.create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}),
            5.0,
        )
        assert route.code == ResponseCode.SUCCESS, route.remark
        [queue_data] = TopicRouteData.from_json(route.body).queue_datas
        for queue_id in range(queue_data.read_queue_nums):
            result.pulled.extend(await pull_queue(client, orbitmq.broker, topic, queue_id))
        async with asyncio.timeout(INDEX_WAIT_S):
            for i in range(count):
                key = expected(i)[2]
                result.by_key[key] = await query_until_found(client, orbitmq.broker, topic, key)
            for m in result.pulled:
                unique_key = m.unique_key or ""
                result.by_unique_key[unique_key] = await query_until_found(
                    client, orbitmq.broker, topic, unique_key
                )
                result.by_offset_id[m.msg_id] = await view_by_id(client, orbitmq.broker, m.msg_id)
        return result
    finally:
        await client.close()


async def pull_queue(
    client: RemotingClient, broker: str, topic: str, queue_id: int
) -> list[MessageExt]:
    """Every message of one queue, pulled from offset 0 until the broker has no more."""
    messages: list[MessageExt] = []
    while True:
        request = pull_request(topic, queue_id, len(messages))
        response = await client.invoke(broker, request, 5.0)
        if response.code != ResponseCode.SUCCESS:
            return messages
        messages.extend(decode_messages(response.body))


async def query_until_found(
    client: RemotingClient, broker: str, topic: str, key: str
) -> list[MessageExt]:
    while not (found := await query(client, broker, key, topic)):
        await asyncio.sleep(0.05)
    return found


async def query(client: RemotingClient, broker: str, key: str, topic: str) -> list[MessageExt]:
    """QUERY_MESSAGE: the messages of ``topic`` indexed under ``key``."""
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=32, begin_timestamp=0, end_timestamp=2**62
    )
    request = RemotingCommand.create_request(RequestCode.QUERY_MESSAGE, header.to_ext_fields())
    response = await client.invoke(broker, request, 5.0)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return []
    assert response.code == ResponseCode.SUCCESS, response.remark
    return decode_messages(response.body)


async def view_by_id(client: RemotingClient, broker: str, offset_msg_id: str) -> MessageExt:
    """VIEW_MESSAGE_BY_ID: the message an offset message id points at."""
    _, offset = decode_message_id(offset_msg_id)
    header = ViewMessageRequestHeader(offset=offset)
    request = RemotingCommand.create_request(RequestCode.VIEW_MESSAGE_BY_ID, header.to_ext_fields())
    response = await client.invoke(broker, request, 5.0)
    assert response.code == ResponseCode.SUCCESS, (offset_msg_id, response.remark)
    [message] = decode_messages(response.body)
    return message


def check_read_back(
    orbitmq: OrbitMQ, topic: str, count: int, sent: list[dict[str, Any]] | None = None
) -> ReadBack:
    """Assert every message of ``topic`` is what was sent, and findable every way.

    ``sent`` holds the client's per-message SendResults in sending order (``msg_id`` is the
    unique key the client set, ``offset`` the queue offset it was told); None when the client
    got none (oneway) or one per batch."""
    found = asyncio.run(read_back(orbitmq, topic, count))
    assert sorted(seen(m) for m in found.pulled) == expected_all(count)
    assert all(m.topic == topic for m in found.pulled)
    by_body = {m.body.decode(): m for m in found.pulled}
    if sent is not None:
        assert len(sent) == count
        for i, result in enumerate(sent):
            message = by_body[expected(i)[0]]
            assert message.unique_key == result["msg_id"]
            assert message.queue_offset == result["offset"]
    for i in range(count):
        [by_key] = found.by_key[expected(i)[2]]
        assert seen(by_key) == expected(i)
        assert by_key.unique_key == by_body[expected(i)[0]].unique_key
    for m in found.pulled:
        [by_unique_key] = found.by_unique_key[m.unique_key or ""]
        assert seen(by_unique_key) == seen(m)
        by_offset_id = found.by_offset_id[m.msg_id]
        assert seen(by_offset_id) == seen(m)
        assert by_offset_id.commit_log_offset == m.commit_log_offset
    return found
