"""``MessageCounters``: the per-message counts of RocketMQ 5's request metrics
(``rocketmq_messages_in_total``, ``_out_total``, ``rocketmq_throughput_*``,
``rocketmq_message_size``), kept as plain numbers in dicts on the send and pull paths and
turned into Prometheus families only when scraped."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from orbitmq.broker.metrics.broker_metrics_constant import MESSAGE_SIZE_BUCKETS
from orbitmq.common.topic_message_type import (
    TYPED_PROPERTY_KEYS,
    TopicMessageType,
    metrics_message_type_of,
)

_NORMAL: Final = TopicMessageType.NORMAL.metrics_value

# The layout of an "in" cell: stored bytes, one put count per message-size bucket (1 KiB,
# 4 KiB, 512 KiB, 1 MiB, 2 MiB, 4 MiB, +Inf), then what batches add: their messages beyond
# the first, and their bytes beyond their one size sample. A one-message put (the common
# case) so costs two int adds: its messages and its size sample follow from the rest.
IN_BYTES: Final = 0
IN_BUCKETS: Final = 1
IN_BATCH_EXTRA_MESSAGES: Final = IN_BUCKETS + len(MESSAGE_SIZE_BUCKETS) + 1
IN_BATCH_EXTRA_BYTES: Final = IN_BATCH_EXTRA_MESSAGES + 1
_CELL_SIZE: Final = IN_BATCH_EXTRA_BYTES + 1
_B1, _B2, _B3, _B4, _B5, _B6 = MESSAGE_SIZE_BUCKETS


class IncomingTotals:
    """One (topic, message type)'s totals as the families show them."""

    __slots__ = ("buckets", "messages", "size_sum", "stored_bytes")

    def __init__(self, cell: list[int]) -> None:
        self.buckets = cell[IN_BUCKETS:IN_BATCH_EXTRA_MESSAGES]
        puts = sum(self.buckets)
        self.messages = puts + cell[IN_BATCH_EXTRA_MESSAGES]
        self.stored_bytes = cell[IN_BYTES]
        self.size_sum = cell[IN_BYTES] - cell[IN_BATCH_EXTRA_BYTES]


class MessageCounters:
    """Owns the running totals of stored and pulled messages: per (topic, message type)
    messages, bytes and the size histogram; per (topic, group) messages and bytes; and each
    (group, topic, queue)'s pull offset (the next offset its last pull asked for, RocketMQ's
    ``pullOffsetTable``), which the in-flight gauges read.

    The record methods are the hot path (a dict lookup and a few int adds each; labels such
    as ``is_system`` and the retry/DLQ exclusions are worked out at scrape time).
    Event-loop confined."""

    def __init__(self) -> None:
        self._normal: dict[str, list[int]] = {}
        self._typed: dict[tuple[str, str], list[int]] = {}
        self.outgoing: dict[tuple[str, str], list[int]] = {}
        self.pull_offsets: dict[tuple[str, str, int], int] = {}

    def record_in(
        self, topic: str, properties: Mapping[str, str], msg_num: int, wrote_bytes: int
    ) -> None:
        """One put of ``msg_num`` messages with these properties, ``wrote_bytes`` stored
        bytes (one size sample, the mean size, as RocketMQ records it)."""
        if TYPED_PROPERTY_KEYS.isdisjoint(properties):
            try:
                cell = self._normal[topic]
            except KeyError:
                cell = self._normal[topic] = [0] * _CELL_SIZE
        else:
            # The label as RocketMQ 5's metrics give it (common.topic_message_type).
            cell = self._typed_cell(topic, metrics_message_type_of(properties).metrics_value)
        cell[0] += wrote_bytes
        if msg_num == 1:
            size = wrote_bytes
        else:
            size = wrote_bytes // msg_num
            cell[IN_BATCH_EXTRA_MESSAGES] += msg_num - 1
            cell[IN_BATCH_EXTRA_BYTES] += wrote_bytes - size
        # Unrolled: most messages fall in the first bucket or two.
        if size <= _B1:
            cell[1] += 1
        elif size <= _B2:
            cell[2] += 1
        elif size <= _B3:
            cell[3] += 1
        elif size <= _B4:
            cell[4] += 1
        elif size <= _B5:
            cell[5] += 1
        elif size <= _B6:
            cell[6] += 1
        else:
            cell[7] += 1

    def _typed_cell(self, topic: str, message_type: str) -> list[int]:
        if message_type == _NORMAL:
            return self._normal.setdefault(topic, [0] * _CELL_SIZE)
        return self._typed.setdefault((topic, message_type), [0] * _CELL_SIZE)

    def incoming(self) -> Iterator[tuple[str, str, IncomingTotals]]:
        """(topic, message type, totals) of every topic stored to, sorted."""
        cells = [((topic, _NORMAL), cell) for topic, cell in self._normal.items()]
        cells.extend(self._typed.items())
        for (topic, message_type), cell in sorted(cells):
            yield topic, message_type, IncomingTotals(cell)

    def record_out(
        self,
        topic: str,
        group: str,
        queue_id: int,
        message_count: int,
        total_bytes: int,
        next_begin_offset: int,
    ) -> None:
        """One pull that found messages."""
        try:
            cell = self.outgoing[(topic, group)]
        except KeyError:
            cell = self.outgoing[(topic, group)] = [0, 0]
        cell[0] += message_count
        cell[1] += total_bytes
        self.pull_offsets[(group, topic, queue_id)] = next_begin_offset

    def pull_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The offset ``group``'s last pull of the queue asked for next; -1: never pulled."""
        return self.pull_offsets.get((group, topic, queue_id), -1)
