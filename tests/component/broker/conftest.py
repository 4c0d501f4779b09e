"""A real BrokerController on 127.0.0.1 port 0, a RemotingClient, and request builders."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import (
    Message,
    MessageExt,
    decode_messages,
    encode_batch_messages,
    message_properties_to_string,
)
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import (
    PullMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
)
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.remoting import RemotingClient
from tests.support import small_config

BrokerFactory = Callable[..., Awaitable[BrokerController]]


@pytest.fixture
async def broker_factory(tmp_path: Path) -> AsyncIterator[BrokerFactory]:
    made: list[BrokerController] = []

    async def factory(**settings: object) -> BrokerController:
        config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
        for key, value in settings.items():
            setattr(config, key, value)
        controller = BrokerController(config, small_config(tmp_path / f"store{len(made)}"))
        await controller.start()
        made.append(controller)
        return controller

    yield factory
    for controller in made:
        await controller.stop()


@pytest.fixture
async def broker(broker_factory: BrokerFactory) -> BrokerController:
    return await broker_factory()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    remoting_client = RemotingClient(connect_timeout_s=2.0)
    yield remoting_client
    await remoting_client.close()


def send_header(
    topic: str, properties: dict[str, str] | None = None, queue_id: int = 0, **extra: object
) -> SendMessageRequestHeader:
    values: dict[str, object] = {
        "producer_group": "pg",
        "topic": topic,
        "default_topic": "TBW102",
        "default_topic_queue_nums": 4,
        "queue_id": queue_id,
        "sys_flag": 0,
        "born_timestamp": 1_700_000_000_000,
        "flag": 0,
        "properties": message_properties_to_string(properties or {}),
    }
    values.update(extra)
    return SendMessageRequestHeader(**values)  # type: ignore[arg-type]


def send_request(code: int, header: SendMessageRequestHeader, body: bytes) -> RemotingCommand:
    ext = (
        header.to_ext_fields()
        if code == RequestCode.SEND_MESSAGE
        else header.to_v2().to_ext_fields()
    )
    return RemotingCommand.create_request(code, ext, body)


def batch_body(messages: list[Message]) -> bytes:
    return encode_batch_messages(messages)


def pull_request(
    topic: str,
    queue_id: int = 0,
    offset: int = 0,
    *,
    group: str = "cg",
    sys_flag: int = FLAG_SUBSCRIPTION,
    subscription: str = "*",
    max_msg_nums: int = 32,
    suspend_timeout_ms: int = 0,
    commit_offset: int = 0,
) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_msg_nums,
        sys_flag=sys_flag,
        commit_offset=commit_offset,
        suspend_timeout_millis=suspend_timeout_ms,
        subscription=subscription,
        sub_version=0,
        expression_type="TAG",
    )
    return RemotingCommand.create_request(RequestCode.PULL_MESSAGE, header.to_ext_fields())


async def send(
    client: RemotingClient, broker: BrokerController, request: RemotingCommand
) -> RemotingCommand:
    return await client.invoke(broker.address, request, 5.0)


def sent_header(response: RemotingCommand) -> SendMessageResponseHeader:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return SendMessageResponseHeader.from_ext_fields(response.ext_fields)


async def pull_all(
    client: RemotingClient,
    broker: BrokerController,
    topic: str,
    expected: int,
    queue_id: int = 0,
    subscription: str = "*",
) -> list[MessageExt]:
    """Pull from offset 0 until ``expected`` messages came back; each pull is held by the
    broker until something arrives (long polling), so no sleeping is needed."""
    found: list[MessageExt] = []
    offset = 0
    async with asyncio.timeout(10):
        while len(found) < expected:
            request = pull_request(
                topic,
                queue_id,
                offset,
                sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
                subscription=subscription,
                suspend_timeout_ms=5000,
            )
            response = await client.invoke(broker.address, request, 8.0)
            if response.code == ResponseCode.SUCCESS:
                found.extend(decode_messages(response.body))
            offset = int(response.ext_fields["nextBeginOffset"])
    return found
