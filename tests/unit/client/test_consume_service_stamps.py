"""Consume start stamps on messages consumed again: a listener that replaced a message's
properties dict (before ever reading it) still finds the next stamp in its own dict."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from orbitmq.client import ConsumeMessageContext, consume_service
from orbitmq.client.consume_service import ConcurrentConsumeService, OrderlyConsumeService
from orbitmq.client.consumer_config import ConsumeContext, PushConsumerConfig
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.common import SYSTEM_CLOCK, MessageExt, MessageQueue, decode_messages, encode_message
from orbitmq.common import message_const as mc
from orbitmq.protocol import MessageModel

MQ = MessageQueue("T", "broker-a", 0)


class Offsets:
    def update_offset(self, mq: MessageQueue, offset: int, increase_only: bool) -> None:
        del mq, offset, increase_only


class Consumer:
    """What the consume services use of a PushConsumer; every send back fails."""

    def __init__(self, message_model: MessageModel) -> None:
        self.group = "g"
        self.clock = SYSTEM_CLOCK
        self.config = PushConsumerConfig(
            consume_message_batch_max_size=8,
            message_model=message_model,
            suspend_current_queue_time_s=0.0,
        )
        self.offset_store = Offsets()

    def before_consume(
        self, messages: Sequence[MessageExt], mq: MessageQueue
    ) -> ConsumeMessageContext:
        return ConsumeMessageContext(self.group, mq, messages)

    def after_consume(self, context: ConsumeMessageContext, success: bool) -> None:
        del context, success

    async def send_message_back(self, msg: MessageExt, delay_level: int) -> bool:
        del msg, delay_level
        return False


def pulled(count: int) -> list[MessageExt]:
    """Messages as a pull gives them, their properties not parsed yet."""
    data = b"".join(
        encode_message(MessageExt(topic="T", properties={"UNIQ_KEY": f"ID{i}"}, queue_offset=i))
        for i in range(count)
    )
    messages = decode_messages(data)
    assert all(m._properties_text is not None for m in messages)
    return messages


class Listener:
    """Replaces every message's properties and fails the first call; records the second."""

    def __init__(self) -> None:
        self.calls = 0
        self.seen: list[dict[str, str]] = []
        self.called_twice = asyncio.Event()

    async def on_messages(self, messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        del context
        self.calls += 1
        if self.calls == 1:
            for m in messages:
                m.properties = {"mine": "1"}
            raise RuntimeError("consume later")
        self.seen = [dict(m.properties) for m in messages]
        self.called_twice.set()


async def test_a_local_retry_stamps_the_dict_the_listener_assigned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(consume_service, "LOCAL_RETRY_DELAY_S", 0.0)
    listener = Listener()
    service = ConcurrentConsumeService(Consumer(MessageModel.CLUSTERING), listener.on_messages)  # type: ignore[arg-type]
    pq = ProcessQueue()
    messages = pulled(3)
    pq.put_messages(messages)
    service.submit(messages, pq, MQ)
    await asyncio.wait_for(listener.called_twice.wait(), 5.0)
    await service.shutdown()
    assert [sorted(p) for p in listener.seen] == [["CONSUME_START_TIME", "mine"]] * 3


async def test_an_orderly_retry_stamps_the_dict_the_listener_assigned() -> None:
    listener = Listener()
    service = OrderlyConsumeService(Consumer(MessageModel.BROADCASTING), listener.on_messages)  # type: ignore[arg-type]
    pq = ProcessQueue()
    messages = pulled(3)
    pq.put_messages(messages)
    service.submit(messages, pq, MQ)
    await asyncio.wait_for(listener.called_twice.wait(), 5.0)
    await service.shutdown()
    assert all(mc.PROPERTY_CONSUME_START_TIMESTAMP in p for p in listener.seen)
    assert [p["mine"] for p in listener.seen] == ["1"] * 3
