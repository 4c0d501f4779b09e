"""The BATCH_ACK_MESSAGE (200151) body: acks of many popped messages in one request.

Members are RocketMQ 5's short names (``BatchAck``'s ``c``, ``t``, ``r``, ``so``, ``q``,
``rq``, ``pt``, ``it``, ``b``). ``b`` is a Java ``BitSet`` written as fastjson writes a byte
array: base64 of ``BitSet.toByteArray()`` (little-endian, bit ``i`` acks queue offset
``startOffset + i``, trailing zero bytes dropped).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass, field

from orbitmq.protocol.body.errors import BodyError
from orbitmq.protocol.body.json_codec import Body, json_name


def bit_set_bytes(indexes: Iterable[int]) -> bytes:
    """Java's ``BitSet.toByteArray()`` of the set holding ``indexes`` (each >= 0)."""
    value = 0
    for index in indexes:
        if index < 0:
            raise ValueError(f"bit index {index} is negative")
        value |= 1 << index
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


def bit_set_indexes(data: bytes) -> list[int]:
    """The set bits of a ``BitSet.toByteArray()``, ascending."""
    value = int.from_bytes(data, "little")
    indexes = []
    index = 0
    while value:
        if value & 1:
            indexes.append(index)
        value >>= 1
        index += 1
    return indexes


@dataclass(slots=True)
class BatchAck(Body):
    """The acks of one POP answer's messages from one queue: the group, the topic as popped
    (``retry`` "1" / "2" for its POP retry topic v1 / v2, "0" for the topic itself), the
    queue, its check point's start offset, revive queue, pop time and invisible time, and the
    acked offsets as a bit set relative to ``start_offset``."""

    consumer_group: str = field(default="", metadata=json_name("c"))
    topic: str = field(default="", metadata=json_name("t"))
    retry: str = field(default="0", metadata=json_name("r"))
    start_offset: int = field(default=0, metadata=json_name("so"))
    queue_id: int = field(default=0, metadata=json_name("q"))
    revive_queue_id: int = field(default=0, metadata=json_name("rq"))
    pop_time: int = field(default=0, metadata=json_name("pt"))
    invisible_time: int = field(default=0, metadata=json_name("it"))
    #: base64 of the bit set's bytes, as fastjson writes ``byte[]``.
    bit_set: str = field(default="", metadata=json_name("b"))

    def set_offsets(self, offsets: Iterable[int]) -> None:
        """Ack the queue ``offsets`` (each >= ``start_offset``), replacing the bit set."""
        start = self.start_offset
        self.bit_set = base64.b64encode(bit_set_bytes(o - start for o in offsets)).decode()

    def acked_offsets(self) -> list[int]:
        """The queue offsets this batch acks; BodyError if ``b`` is not base64."""
        try:
            data = base64.b64decode(self.bit_set, validate=True)
        except (binascii.Error, ValueError) as exc:
            shown = repr(self.bit_set[:64])
            raise BodyError(f"{shown} is not a base64 bit set", "BatchAck.b") from exc
        return [self.start_offset + index for index in bit_set_indexes(data)]


@dataclass(slots=True)
class BatchAckMessageRequestBody(Body):
    """BATCH_ACK_MESSAGE's body: the broker the acks are for and one entry per queue."""

    broker_name: str = ""
    acks: list[BatchAck] = field(default_factory=list)
