"""A consumer group's dead letters: the messages in ``%DLQ%<group>``, listed and resent.

A message that failed more than its group's max reconsume times is stored by the broker in
``%DLQ%<group>`` (one queue) with RETRY_TOPIC naming the topic it came from and
ORIGIN_MESSAGE_ID its first offset message id; its UNIQ_KEY is kept. :func:`read_dead_letters`
reads that topic through :class:`QueueReader` (plain pulls as the tools group, nothing
committed); :func:`resend_dead_letters` sends each chosen one to its original topic again.

Resending is idempotent per dead letter: the new message's UNIQ_KEY is derived from the
dead letter's offset message id (:func:`resend_unique_key`), and before sending, the original
topic's index is asked for that key; when it is there the dead letter counts as already
resent. The record is the resent message itself, in the broker's store, so it holds across
clients and restarts. Its limits: it lasts as long as the resent message is retained (after
retention deletes it, a resend sends again), it needs the broker's message index, and two
resends of one dead letter running at the same moment may both send (check, then send, is not
atomic); resends made one after another send once.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Final

from orbitmq.client.producer import Producer
from orbitmq.client.queue_reader import QueueReader
from orbitmq.client.send_result import SendResult
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.common import message_const as mc

#: The producer group resends go out under (RocketMQ's ``MixAll.CLIENT_INNER_PRODUCER_GROUP``).
RESEND_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
#: How many dead letters a listing returns unless told otherwise.
DEFAULT_DEAD_LETTER_LIMIT: Final = 1000
#: How long a resend waits for the broker to index what it sent, so that the next resend of
#: the same dead letter finds it.
INDEX_WAIT_S: Final = 3.0
_INDEX_POLL_S: Final = 0.02

#: Looks a unique key up in a topic: True when a message with it is stored there.
UniqueKeyLookup = Callable[[str, str], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One message of ``%DLQ%<group>``, as an operator looks at it before resending.

    ``msg_id`` is the dead letter's own offset message id (what a resend names);
    ``original_msg_id`` the offset id the message had in its original topic and
    ``unique_key`` the id its producer gave it (SendResult.msg_id). ``store_timestamp_ms``
    is when it became a dead letter: the time of its last failure. Immutable: share it
    freely between tasks and threads."""

    msg_id: str
    queue: MessageQueue
    queue_offset: int
    original_topic: str
    original_msg_id: str | None
    unique_key: str | None
    keys: tuple[str, ...]
    tags: str | None
    reconsume_times: int
    store_timestamp_ms: int
    body_size: int

    @classmethod
    def of(cls, queue: MessageQueue, message: MessageExt) -> DeadLetter:
        return cls(
            msg_id=message.msg_id,
            queue=queue,
            queue_offset=message.queue_offset,
            original_topic=original_topic(message),
            original_msg_id=message.properties.get(mc.PROPERTY_ORIGIN_MESSAGE_ID),
            unique_key=message.unique_key,
            keys=tuple(message.keys),
            tags=message.tags,
            reconsume_times=message.reconsume_times,
            store_timestamp_ms=message.store_timestamp,
            body_size=len(message.body),
        )


class ResendStatus(enum.Enum):
    """What resending one dead letter did."""

    SENT = "sent"
    #: A message resent from this dead letter is already in its original topic.
    ALREADY_RESENT = "already_resent"
    #: No dead letter of the group has this message id.
    NOT_FOUND = "not_found"


@dataclass(frozen=True, slots=True)
class ResendResult:
    """One dead letter's resend: its ``msg_id``, the outcome, the unique id the resent
    message has (or would have) in its original topic, and the send's answer when sent.
    Immutable."""

    msg_id: str
    status: ResendStatus
    resent_unique_key: str | None = None
    send_result: SendResult | None = None


def original_topic(message: MessageExt) -> str:
    """The topic a dead letter came from: its RETRY_TOPIC, else its REAL_TOPIC, else the
    topic it is stored in."""
    props = message.properties
    return props.get(mc.PROPERTY_RETRY_TOPIC) or props.get(mc.PROPERTY_REAL_TOPIC) or message.topic


def resend_unique_key(dlq_msg_id: str) -> str:
    """The UNIQ_KEY a resend of the dead letter ``dlq_msg_id`` carries: the same for every
    resend of it, from any client, and shaped as RocketMQ's unique ids are (32 hex)."""
    digest = hashlib.md5(f"{mc.PROPERTY_DLQ_ORIGIN_MESSAGE_ID}:{dlq_msg_id}".encode())
    return digest.hexdigest().upper()


def resend_message(dead: MessageExt) -> Message:
    """A new message for the dead letter's original topic: its body, flag, keys, tags and
    user properties, without the properties brokers and clients set (STRING_HASH_SET), plus
    DLQ_ORIGIN_MESSAGE_ID and the derived UNIQ_KEY."""
    props = dead.properties
    kept = {k: v for k, v in props.items() if k not in mc.STRING_HASH_SET}
    for key in (mc.PROPERTY_KEYS, mc.PROPERTY_TAGS):
        if props.get(key):
            kept[key] = props[key]
    kept[mc.PROPERTY_DLQ_ORIGIN_MESSAGE_ID] = dead.msg_id
    kept[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = resend_unique_key(dead.msg_id)
    return Message(original_topic(dead), dead.body, dead.flag, kept)


async def read_dead_letters(
    reader: QueueReader, topic: str, limit: int | None
) -> list[tuple[MessageQueue, MessageExt]]:
    """The messages of the DLQ ``topic`` queue by queue (one per broker, in broker name
    order), oldest first in each, at most ``limit`` (every one when None)."""
    found: list[tuple[MessageQueue, MessageExt]] = []
    for mq, (low, high) in sorted((await reader.queue_offsets(topic)).items()):
        async for batch in reader.read(mq, low, high):
            for message in batch:
                if limit is not None and len(found) >= limit:
                    return found
                found.append((mq, message))
    return found


async def resend_dead_letters(
    producer: Producer,
    letters: list[MessageExt],
    msg_ids: str | Iterable[str] | None,
    is_stored: UniqueKeyLookup,
    on_result: Callable[[ResendResult], None] | None = None,
) -> list[ResendResult]:
    """Resend ``letters`` (the one or those named by ``msg_ids``, or all), in the order
    asked, each id once; a named id that is not among them is NOT_FOUND. ``is_stored`` asks
    a topic's index for a unique key; ``on_result`` is told each result as it comes (a
    progress bar)."""
    by_id = {m.msg_id: m for m in letters}
    if msg_ids is None:
        wanted = list(by_id)
    else:
        wanted = list(dict.fromkeys([msg_ids] if isinstance(msg_ids, str) else msg_ids))
    results: list[ResendResult] = []
    for msg_id in wanted:
        dead = by_id.get(msg_id)
        if dead is None:
            result = ResendResult(msg_id, ResendStatus.NOT_FOUND)
        else:
            result = await _resend_one(producer, dead, is_stored)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


async def _resend_one(
    producer: Producer, dead: MessageExt, is_stored: UniqueKeyLookup
) -> ResendResult:
    message = resend_message(dead)
    key = resend_unique_key(dead.msg_id)
    if await is_stored(message.topic, key):
        return ResendResult(dead.msg_id, ResendStatus.ALREADY_RESENT, key)
    sent = await producer.send(message)
    await _wait_until_indexed(message.topic, key, is_stored)
    return ResendResult(dead.msg_id, ResendStatus.SENT, key, sent)


async def _wait_until_indexed(topic: str, key: str, is_stored: UniqueKeyLookup) -> None:
    # The broker indexes a stored message shortly after answering the send: wait for it so
    # that a resend made after this one returned sees it (best effort, bounded).
    try:
        async with asyncio.timeout(INDEX_WAIT_S):
            while not await is_stored(topic, key):
                await asyncio.sleep(_INDEX_POLL_S)
    except TimeoutError:
        pass
