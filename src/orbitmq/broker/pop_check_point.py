"""The revive log's records (RocketMQ 5's ``PopCheckPoint``, ``AckMsg`` and ``BatchAckMsg``),
as JSON with RocketMQ's short member names, and the messages that carry them.

One check point is written per POP answer per queue (not per message): the queue offset of
the first message (``so``), the offsets of the others as differences from it (``d``), when
they were popped (``pt``) and for how long they are invisible (``it``). An ack names one
offset (``ao``); a batch ack a list (``aol``). Both name the check point by group, topic,
queue, start offset and pop time. Values are plain data: safe to share once built.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from orbitmq.common import MessageExtBrokerInner, message_properties_to_string
from orbitmq.common import message_const as mc
from orbitmq.common.key_builder import ACK_TAG, BATCH_ACK_TAG, CK_TAG, SPLIT
from orbitmq.common.message import SocketAddress

#: (group, topic, queue id, start offset, pop time): the key acks find their check point by.
CheckPointKey = tuple[str, str, int, int, int]


@dataclass(slots=True)
class PopCheckPoint:
    """One POP answer's messages from one queue. ``bit_map`` holds the acked indexes (of
    ``queue_offset_diff``); ``revive_offset`` is where the record sits in its revive queue
    (a lower bound while its write is under way)."""

    start_offset: int
    pop_time: int
    invisible_time: int
    queue_id: int
    topic: str
    cid: str
    queue_offset_diff: list[int]
    broker_name: str = ""
    bit_map: int = 0
    revive_offset: int = 0
    re_put_times: int = 0

    @property
    def num(self) -> int:
        return len(self.queue_offset_diff)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def key(self) -> CheckPointKey:
        return (self.cid, self.topic, self.queue_id, self.start_offset, self.pop_time)

    @property
    def end_offset(self) -> int:
        """The queue offset after the last message it covers."""
        return self.start_offset + max(self.queue_offset_diff, default=-1) + 1

    def index_of(self, offset: int) -> int:
        """The index of queue ``offset`` among the messages, -1 if not one of them."""
        diff = offset - self.start_offset
        try:
            return self.queue_offset_diff.index(diff)
        except ValueError:
            return -1

    def ack(self, offset: int) -> bool:
        """Mark ``offset`` acked; False when the check point does not cover it."""
        index = self.index_of(offset)
        if index < 0:
            return False
        self.bit_map |= 1 << index
        return True

    @property
    def all_acked(self) -> bool:
        return self.bit_map == (1 << self.num) - 1

    def unacked_offsets(self) -> list[int]:
        return [
            self.start_offset + diff
            for index, diff in enumerate(self.queue_offset_diff)
            if not self.bit_map >> index & 1
        ]

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "bm": self.bit_map,
                "bn": self.broker_name,
                "c": self.cid,
                "d": self.queue_offset_diff,
                "it": self.invisible_time,
                "n": self.num,
                "pt": self.pop_time,
                "q": self.queue_id,
                "ro": self.revive_offset,
                "rp": str(self.re_put_times),
                "so": self.start_offset,
                "t": self.topic,
            }
        )

    @classmethod
    def from_json(cls, data: bytes) -> PopCheckPoint:
        """Raises ValueError (or KeyError / TypeError) for a record of the wrong shape."""
        raw: dict[str, Any] = orjson.loads(data)
        diff = raw.get("d") or list(range(int(raw["n"])))
        return cls(
            start_offset=int(raw["so"]),
            pop_time=int(raw["pt"]),
            invisible_time=int(raw["it"]),
            queue_id=int(raw["q"]),
            topic=str(raw["t"]),
            cid=str(raw["c"]),
            queue_offset_diff=[int(d) for d in diff],
            broker_name=str(raw.get("bn") or ""),
            bit_map=int(raw.get("bm") or 0),
            revive_offset=int(raw.get("ro") or 0),
            re_put_times=int(raw.get("rp") or 0),
        )


@dataclass(slots=True)
class AckMsg:
    """Acks of one check point's messages: ``ack_offsets`` (one for ACK_MESSAGE's ``ack``
    record, several for a ``bAck``)."""

    consumer_group: str
    topic: str
    queue_id: int
    start_offset: int
    pop_time: int
    ack_offsets: list[int] = field(default_factory=list)
    broker_name: str = ""

    @property
    def key(self) -> CheckPointKey:
        return (self.consumer_group, self.topic, self.queue_id, self.start_offset, self.pop_time)

    @property
    def is_batch(self) -> bool:
        return len(self.ack_offsets) != 1

    def to_json(self) -> bytes:
        value: dict[str, Any] = {
            "bn": self.broker_name,
            "c": self.consumer_group,
            "pt": self.pop_time,
            "q": self.queue_id,
            "so": self.start_offset,
            "t": self.topic,
        }
        if self.is_batch:
            value["ao"] = -1
            value["aol"] = self.ack_offsets
        else:
            value["ao"] = self.ack_offsets[0]
        return orjson.dumps(value)

    @classmethod
    def from_json(cls, data: bytes) -> AckMsg:
        raw: dict[str, Any] = orjson.loads(data)
        offsets = raw.get("aol")
        return cls(
            consumer_group=str(raw["c"]),
            topic=str(raw["t"]),
            queue_id=int(raw["q"]),
            start_offset=int(raw["so"]),
            pop_time=int(raw["pt"]),
            ack_offsets=[int(o) for o in offsets] if offsets else [int(raw["ao"])],
            broker_name=str(raw.get("bn") or ""),
        )


def ck_unique_id(ck: PopCheckPoint) -> str:
    """RocketMQ's genCkUniqueId: the UNIQ_KEY of a check point's record."""
    parts = (ck.topic, ck.queue_id, ck.start_offset, ck.cid, ck.pop_time, ck.broker_name, CK_TAG)
    return SPLIT.join(str(part) for part in parts)


def ack_unique_id(ack: AckMsg) -> str:
    """RocketMQ's genAckUniqueId / genBatchAckUniqueId."""
    offsets = str(ack.ack_offsets[0]) if not ack.is_batch else str(ack.ack_offsets)
    tag = BATCH_ACK_TAG if ack.is_batch else ACK_TAG
    parts = (ack.topic, ack.queue_id, offsets, ack.consumer_group, ack.pop_time, ack.broker_name)
    return SPLIT.join(str(part) for part in (*parts, tag))


def revive_record(
    revive_topic: str,
    revive_qid: int,
    record: PopCheckPoint | AckMsg,
    store_host: SocketAddress,
    now_ms: int,
    tag: str | None = None,
) -> MessageExtBrokerInner:
    """The revive log message that carries ``record`` (tag ck, ack or bAck, unless
    ``tag`` says otherwise)."""
    if isinstance(record, PopCheckPoint):
        tag, unique = tag or CK_TAG, ck_unique_id(record)
    else:
        tag = tag or (BATCH_ACK_TAG if record.is_batch else ACK_TAG)
        unique = ack_unique_id(record)
    properties = {
        mc.PROPERTY_TAGS: tag,
        mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: unique,
    }
    return MessageExtBrokerInner(
        revive_topic,
        body=record.to_json(),
        properties=properties,
        properties_string=message_properties_to_string(properties),
        queue_id=revive_qid,
        born_timestamp=now_ms,
        born_host=store_host,
        store_host=store_host,
    )
