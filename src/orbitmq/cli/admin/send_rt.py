"""Timed sends, what mqadmin checkMsgSendRT, clusterRT and sendMsgStatus measure: each send's
round trip through a producer, and the average over those that succeeded."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from orbitmq.cli.output import Advance
from orbitmq.client import Producer
from orbitmq.common import Message, MessageQueue, OrbitError

#: The producer group of the command line's sends (RocketMQ's MixAll.DEFAULT_PRODUCER_GROUP,
#: which mqadmin's sendMessage uses).
CLI_PRODUCER_GROUP: Final = "DEFAULT_PRODUCER"


@dataclass(frozen=True, slots=True)
class TimedSend:
    """One send: where it went (empty when it failed before choosing), whether it was
    stored, and its round trip in milliseconds. Immutable."""

    broker_name: str
    queue_id: int
    ok: bool
    rt_ms: float
    error: str = ""

    def row(self) -> dict[str, Any]:
        return {
            "brokerName": self.broker_name,
            "queueId": self.queue_id,
            "sendResult": "OK" if self.ok else self.error,
            "rtMs": round(self.rt_ms, 3),
        }


async def timed_sends(
    producer: Producer,
    topic: str,
    amount: int,
    size: int,
    advance: Advance,
    queue: MessageQueue | None = None,
) -> list[TimedSend]:
    """``amount`` sends of a ``size``-byte body to ``topic`` (to ``queue`` when given), one
    after another; a failed send is recorded, not raised."""
    body = b"x" * size
    sends: list[TimedSend] = []
    for _ in range(amount):
        started = time.perf_counter()
        try:
            result = await producer.send(Message(topic, body), queue=queue)
        except OrbitError as exc:
            rt_ms = (time.perf_counter() - started) * 1000
            name = queue.broker_name if queue else ""
            sends.append(TimedSend(name, -1, False, rt_ms, " ".join(str(exc).split())))
        else:
            rt_ms = (time.perf_counter() - started) * 1000
            mq = result.message_queue
            sends.append(TimedSend(mq.broker_name, mq.queue_id, True, rt_ms))
        advance()
    return sends


def summary(sends: Sequence[TimedSend]) -> dict[str, Any]:
    """Successes, failures and the average round trip of the successes (ms)."""
    ok = [s.rt_ms for s in sends if s.ok]
    return {
        "successCount": len(ok),
        "failCount": len(sends) - len(ok),
        "avgRtMs": round(sum(ok) / len(ok), 3) if ok else None,
    }
