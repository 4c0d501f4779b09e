"""POP's extra info: the string that ties a popped message to its check point (RocketMQ 5's
``ExtraInfoUtil``), and the per-queue info strings of a POP answer.

A popped message carries it in its ``POP_CK`` property, and the consumer sends it back in
ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME (``extraInfo``). It is space-separated::

    <ck offset> <pop time> <invisible time> <revive qid> <retry> <broker> <queue> [<offset>]

``retry`` is "0" for the topic itself, "1" for its POP retry topic v1, "2" for v2. A revive
qid of 999 marks FIFO POP. The POP answer's headers hold, per queue, ``<retry> <queueId>
<value>`` joined by ``;``: the check point's start offset (``startOffsetInfo``), the popped
offsets joined by ``,`` (``msgOffsetInfo``) and, for FIFO POP, the delivery counts
(``orderCountInfo``, keyed by queue or by ``qo<queueId>%<offset>``).

The extra info is the 5.x receipt handle's core (the gRPC receipt handle adds the message id
and the message's commit log offset to it). Everything here is pure; values are immutable and
safe to share between tasks and threads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from orbitmq.common.key_builder import (
    POP_ORDER_REVIVE_QUEUE,
    build_pop_retry_topic_v1,
    build_pop_retry_topic_v2,
    is_pop_retry_topic_v2,
)
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.protocol.errors import ProtocolError

NORMAL_TOPIC: Final = "0"
RETRY_TOPIC_V1: Final = "1"
RETRY_TOPIC_V2: Final = "2"
_RETRY_MARKS: Final = frozenset({NORMAL_TOPIC, RETRY_TOPIC_V1, RETRY_TOPIC_V2})
_QUEUE_OFFSET_KEY: Final = "qo"
_SHOWN_CHARS: Final = 96


class ExtraInfoError(ProtocolError):
    """An extra info (or POP answer info) string that is not one this broker could have made:
    the message names the string and what is wrong with it."""

    def __init__(self, text: str, problem: str) -> None:
        shown = text if len(text) <= _SHOWN_CHARS else text[:_SHOWN_CHARS] + "..."
        super().__init__(f"extraInfo {shown!r} {problem}")


def retry_mark(topic: str) -> str:
    """ "2" for a POP retry topic v2, "1" for any other retry topic, "0" otherwise."""
    if is_pop_retry_topic_v2(topic):
        return RETRY_TOPIC_V2
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC_V1
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, retry: str) -> str:
    """The topic a message popped from ``topic`` with ``retry`` mark really lives in."""
    if retry == RETRY_TOPIC_V1:
        return build_pop_retry_topic_v1(topic, group)
    if retry == RETRY_TOPIC_V2:
        return build_pop_retry_topic_v2(topic, group)
    if retry == NORMAL_TOPIC:
        return topic
    raise ExtraInfoError(retry, "is not a retry mark (0, 1 or 2)")


def _integer(text: str, whole: str, what: str) -> int:
    digits = text[1:] if text[:1] == "-" else text
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 19:
        raise ExtraInfoError(whole, f"has {what} {text!r}, not an integer")
    return int(text)


@dataclass(frozen=True, slots=True)
class ExtraInfo:
    """One popped message's extra info, parsed. ``queue_offset`` is None in the 7-field form
    (older clients put the message's own offset only in the request's ``offset``)."""

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None

    @classmethod
    def parse(cls, text: str) -> ExtraInfo:
        """The extra info in ``text``; ExtraInfoError naming the field when it is not one."""
        parts = text.split(" ")
        if len(parts) not in (7, 8):
            raise ExtraInfoError(text, f"has {len(parts)} fields, not 7 or 8")
        if parts[4] not in _RETRY_MARKS:
            raise ExtraInfoError(text, f"has retry mark {parts[4]!r}, not 0, 1 or 2")
        if not parts[5]:
            raise ExtraInfoError(text, "has no broker name")
        return cls(
            ck_queue_offset=_integer(parts[0], text, "check point offset"),
            pop_time=_integer(parts[1], text, "pop time"),
            invisible_time=_integer(parts[2], text, "invisible time"),
            revive_qid=_integer(parts[3], text, "revive queue id"),
            retry=parts[4],
            broker_name=parts[5],
            queue_id=_integer(parts[6], text, "queue id"),
            queue_offset=_integer(parts[7], text, "queue offset") if len(parts) == 8 else None,
        )

    @classmethod
    def build(
        cls,
        *,
        ck_queue_offset: int,
        pop_time: int,
        invisible_time: int,
        revive_qid: int,
        topic: str,
        broker_name: str,
        queue_id: int,
        queue_offset: int | None = None,
    ) -> ExtraInfo:
        """The extra info of a message popped from ``topic`` (a retry topic gets its mark)."""
        return cls(
            ck_queue_offset,
            pop_time,
            invisible_time,
            revive_qid,
            retry_mark(topic),
            broker_name,
            queue_id,
            queue_offset,
        )

    def __str__(self) -> str:
        head = (
            f"{self.ck_queue_offset} {self.pop_time} {self.invisible_time} {self.revive_qid} "
            f"{self.retry} {self.broker_name} {self.queue_id}"
        )
        return head if self.queue_offset is None else f"{head} {self.queue_offset}"

    @property
    def is_order(self) -> bool:
        """FIFO POP: no check point, the order info manager holds the state."""
        return self.revive_qid == POP_ORDER_REVIVE_QUEUE

    @property
    def revive_time(self) -> int:
        """When (ms) the message becomes visible again unless acked."""
        return self.pop_time + self.invisible_time

    def real_topic(self, topic: str, group: str) -> str:
        """The topic the message lives in, given the topic it was popped for."""
        return real_topic(topic, group, self.retry)

    def changed(
        self, offset: int, pop_time: int, invisible_time: int, revive_qid: int
    ) -> ExtraInfo:
        """The extra info after CHANGE_MESSAGE_INVISIBLETIME answered ``pop_time`` /
        ``invisible_time`` / ``revive_qid``: the new check point covers ``offset`` alone
        (RocketMQ's client builds it the same way)."""
        return ExtraInfo(
            offset,
            pop_time,
            invisible_time,
            revive_qid,
            self.retry,
            self.broker_name,
            self.queue_id,
            offset,
        )


def queue_key(topic: str, queue_id: int) -> str:
    """``<retry>@<queueId>``: the key of a queue in the parsed POP answer infos."""
    return f"{retry_mark(topic)}@{queue_id}"


def queue_offset_key(topic: str, queue_id: int, offset: int) -> str:
    """``<retry>@qo<queueId>%<offset>``: a FIFO POP message's key in the order count info."""
    return f"{retry_mark(topic)}@{_QUEUE_OFFSET_KEY}{queue_id}%{offset}"


def start_offset_entry(topic: str, queue_id: int, start_offset: int) -> str:
    return f"{retry_mark(topic)} {queue_id} {start_offset}"


def msg_offset_entry(topic: str, queue_id: int, offsets: Iterable[int]) -> str:
    return f"{retry_mark(topic)} {queue_id} " + ",".join(str(o) for o in offsets)


def order_count_entry(topic: str, queue_id: int, offset: int, count: int) -> str:
    """One message's delivery count, keyed by its queue offset (RocketMQ 5's newer form)."""
    return f"{retry_mark(topic)} {_QUEUE_OFFSET_KEY}{queue_id}%{offset} {count}"


def _entries(text: str | None) -> list[tuple[str, str]]:
    """(key, value) per ``;``-joined entry of a POP answer info; empty for None or ''."""
    if not text:
        return []
    result = []
    seen = set()
    for one in text.split(";"):
        parts = one.split(" ")
        if len(parts) != 3:
            raise ExtraInfoError(text, f"has entry {one!r}, not '<retry> <queue> <value>'")
        key = f"{parts[0]}@{parts[1]}"
        if key in seen:
            raise ExtraInfoError(text, f"names {key} twice")
        seen.add(key)
        result.append((key, parts[2]))
    return result


def parse_start_offset_info(text: str | None) -> dict[str, int]:
    """``<retry>@<queueId>`` -> the check point's start offset."""
    return {key: _integer(value, text or "", "offset") for key, value in _entries(text)}


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]]:
    """``<retry>@<queueId>`` -> the popped queue offsets, in order."""
    return {
        key: [_integer(v, text or "", "offset") for v in value.split(",")]
        for key, value in _entries(text)
    }


def parse_order_count_info(text: str | None) -> dict[str, int]:
    """``<retry>@<queueId>`` or ``<retry>@qo<queueId>%<offset>`` -> delivery count."""
    return {key: _integer(value, text or "", "count") for key, value in _entries(text)}
