"""Request builders and a broker fixture for the POP tests: a real broker on port 0 with a
ManualClock (invisible times pass when the test says so) and a RemotingClient."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import MessageExt, decode_messages
from orbitmq.common import message_const as mc
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from orbitmq.protocol.pop_extra_info import (
    ExtraInfo,
    parse_msg_offset_info,
    parse_start_offset_info,
    queue_key,
)
from orbitmq.remoting import RemotingClient
from orbitmq.testing.manual_clock import ManualClock
from tests.component.broker.conftest import send_header, send_request
from tests.support import small_config

START_MS = 1_700_000_000_000


@dataclass
class PopBroker:
    broker: BrokerController
    client: RemotingClient
    clock: ManualClock

    async def invoke(self, request: RemotingCommand, timeout_s: float = 5.0) -> RemotingCommand:
        return await self.client.invoke(self.broker.address, request, timeout_s)

    async def send(self, topic: str, body: bytes, queue_id: int = 0, tags: str = "") -> None:
        properties = {mc.PROPERTY_TAGS: tags} if tags else {}
        header = send_header(topic, properties, queue_id=queue_id)
        response = await self.invoke(send_request(RequestCode.SEND_MESSAGE_V2, header, body))
        assert response.code == ResponseCode.SUCCESS, response.remark

    async def pop(self, topic: str, **kwargs: Any) -> PopAnswer:
        response = await self.invoke(pop_request(topic, born_time=self.clock.now_ms(), **kwargs))
        return PopAnswer(response, self.broker.broker_config.broker_name)

    async def ack(self, message: MessageExt, group: str = "cg") -> RemotingCommand:
        extra = message.properties[mc.PROPERTY_POP_CK]
        parsed = ExtraInfo.parse(extra)
        header = AckMessageRequestHeader(
            consumer_group=group,
            topic=parsed.real_topic(message.topic, group),
            queue_id=message.queue_id,
            extra_info=extra,
            offset=message.queue_offset,
        )
        return await self.invoke(
            RemotingCommand.create_request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
        )

    async def change_invisible(
        self, message: MessageExt, invisible_ms: int, group: str = "cg"
    ) -> RemotingCommand:
        extra = message.properties[mc.PROPERTY_POP_CK]
        parsed = ExtraInfo.parse(extra)
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=group,
            topic=parsed.real_topic(message.topic, group),
            queue_id=message.queue_id,
            extra_info=extra,
            offset=message.queue_offset,
            invisible_time=invisible_ms,
        )
        return await self.invoke(
            RemotingCommand.create_request(
                RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields()
            )
        )

    async def revive(self, advance_ms: int) -> int:
        """Let ``advance_ms`` pass and run the revive service once; messages revived."""
        self.clock.advance(advance_ms)
        return await self.broker.pop.revive_service.revive_once()


class PopAnswer:
    """A POP answer with its messages, each given its POP_CK as RocketMQ's client does."""

    def __init__(self, response: RemotingCommand, broker_name: str) -> None:
        self.response = response
        self.code = response.code
        self.messages: list[MessageExt] = []
        if response.code != ResponseCode.SUCCESS:
            return
        self.header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
        starts = parse_start_offset_info(self.header.start_offset_info)
        offsets = parse_msg_offset_info(self.header.msg_offset_info)
        for message in decode_messages(response.body):
            if mc.PROPERTY_POP_CK not in message.properties:
                key = queue_key(message.topic, message.queue_id)
                assert message.queue_offset in offsets[key]
                extra = ExtraInfo.build(
                    ck_queue_offset=starts[key],
                    pop_time=self.header.pop_time,
                    invisible_time=self.header.invisible_time,
                    revive_qid=self.header.revive_qid,
                    topic=message.topic,
                    broker_name=broker_name,
                    queue_id=message.queue_id,
                    queue_offset=message.queue_offset,
                )
                message.properties[mc.PROPERTY_POP_CK] = str(extra)
            self.messages.append(message)

    @property
    def bodies(self) -> list[bytes]:
        return [m.body for m in self.messages]


def pop_request(
    topic: str,
    *,
    group: str = "cg",
    queue_id: int = -1,
    max_msg_nums: int = 32,
    invisible_ms: int = 30_000,
    poll_ms: int = 0,
    born_time: int = 0,
    init_mode: int = 0,
    order: bool = False,
    exp: str | None = None,
    exp_type: str | None = None,
) -> RemotingCommand:
    header = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        max_msg_nums=max_msg_nums,
        invisible_time=invisible_ms,
        poll_time=poll_ms,
        born_time=born_time,
        init_mode=init_mode,
        exp=exp,
        exp_type=exp_type,
        order=order,
    )
    return RemotingCommand.create_request(RequestCode.POP_MESSAGE, header.to_ext_fields())


async def start_pop_broker(root: Path, **settings: object) -> BrokerController:
    clock = settings.pop("clock", None)
    assert isinstance(clock, ManualClock)
    config = BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0)
    # Deterministic: the retry topic is read after the topic, never first.
    config.pop_from_retry_probability = 0
    for key, value in settings.items():
        setattr(config, key, value)
    controller = BrokerController(config, small_config(root), clock=clock)
    await controller.start()
    return controller


PopBrokerFactory = Callable[..., Awaitable[PopBroker]]


async def pop_broker_fixture(tmp_path: Path) -> AsyncIterator[PopBrokerFactory]:
    made: list[PopBroker] = []

    async def factory(**settings: object) -> PopBroker:
        clock = ManualClock(START_MS)
        broker = await start_pop_broker(tmp_path / f"store{len(made)}", clock=clock, **settings)
        client = RemotingClient(connect_timeout_s=2.0)
        made.append(PopBroker(broker, client, clock))
        return made[-1]

    yield factory
    for made_broker in made:
        await made_broker.client.close()
        await made_broker.broker.stop()
