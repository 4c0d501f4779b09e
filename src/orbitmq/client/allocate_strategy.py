"""RocketMQ's queue allocation (rebalance) strategies.

Every consumer of a group runs the same strategy on the same sorted inputs and keeps only its
own share, so the strategies must be deterministic and must agree with the Java client's: a
group that mixes OrbitMQ and Java consumers would otherwise consume some queues twice and others
not at all. Each ``allocate`` is a pure function of its arguments and the strategy's settings.

RocketMQ's callers sort ``mq_all`` and ``cid_all`` before calling; these functions do not sort
again, exactly like the originals.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Protocol, TypeVar

from orbitmq.client.consistent_hash_router import ConsistentHashRouter, HashFunction, md5_hash
from orbitmq.common import MessageQueue

MachineRoomResolver = Callable[[MessageQueue | str], str | None]
"""RocketMQ's MachineRoomResolver as one callable: given a MessageQueue it answers the machine
room of the queue's broker (``brokerDeployIn``), given a client id the machine room of that
consumer (``consumerDeployIn``). An empty answer is an error."""

_T = TypeVar("_T")


class AllocateMessageQueueStrategy(Protocol):
    """A role: split a topic's queues among the consumers of a group."""

    @property
    def name(self) -> str:
        """RocketMQ's getName(), e.g. ``"AVG"``."""
        ...

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        """The queues ``current_cid`` should consume out of ``mq_all``."""
        ...


def check_allocate_arguments(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> bool:
    """RocketMQ's AbstractAllocateMessageQueueStrategy.check.

    Empty inputs are misuse and raise. A current id missing from ``cid_all`` is a stale view of
    the group (the broker has not seen this consumer yet): the consumer then takes nothing this
    round rather than failing, hence ``False`` instead of an error.
    """
    if not current_cid:
        raise ValueError("current_cid is empty")
    if not mq_all:
        raise ValueError("mq_all is empty")
    if not cid_all:
        raise ValueError("cid_all is empty")
    return current_cid in cid_all


def allocate_averagely(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Contiguous blocks; the first ``len(mq_all) % len(cid_all)`` consumers get one extra."""
    if not check_allocate_arguments(current_cid, mq_all, cid_all):
        return []
    queue_count, consumer_count = len(mq_all), len(cid_all)
    index = cid_all.index(current_cid)
    mod = queue_count % consumer_count
    gets_extra = mod > 0 and index < mod
    if queue_count <= consumer_count:
        average = 1
    else:
        average = queue_count // consumer_count + (1 if gets_extra else 0)
    start = index * average if gets_extra else index * average + mod
    # With more consumers than queues, the consumers past the last queue get a negative range.
    count = min(average, queue_count - start)
    return [mq_all[(start + i) % queue_count] for i in range(count)]


def allocate_averagely_by_circle(
    current_cid: str, mq_all: Sequence[MessageQueue], cid_all: Sequence[str]
) -> list[MessageQueue]:
    """Deal the queues out like cards: queue ``i`` goes to consumer ``i % len(cid_all)``."""
    if not check_allocate_arguments(current_cid, mq_all, cid_all):
        return []
    index = cid_all.index(current_cid)
    return list(mq_all[index :: len(cid_all)])


def _java_split(text: str, separator: str) -> list[str]:
    """Java's String.split for a literal separator: trailing empty parts are dropped, which
    changes how many parts a broker name such as ``"idc@broker@"`` has."""
    parts = text.split(separator)
    while parts and not parts[-1]:
        parts.pop()
    return parts


def allocate_by_machine_room(
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    consumer_idcs: frozenset[str],
) -> list[MessageQueue]:
    """Only queues of brokers named ``"<idc>@<name>"`` with ``<idc>`` in ``consumer_idcs``
    count; those are split in blocks of ``n // consumers`` and the remainder is dealt one each
    to the first consumers. Queues of other brokers go to nobody."""
    if not check_allocate_arguments(current_cid, mq_all, cid_all):
        return []
    index = cid_all.index(current_cid)
    eligible = []
    for mq in mq_all:
        parts = _java_split(mq.broker_name, "@")
        if len(parts) == 2 and parts[0] in consumer_idcs:
            eligible.append(mq)
    consumer_count = len(cid_all)
    block, remainder = divmod(len(eligible), consumer_count)
    result = eligible[block * index : block * index + block]
    if remainder > index:
        result.append(eligible[index + block * consumer_count])
    return result


def allocate_consistent_hash(
    current_cid: str,
    mq_all: Sequence[MessageQueue],
    cid_all: Sequence[str],
    virtual_node_count: int = 10,
    hash_function: HashFunction = md5_hash,
) -> list[MessageQueue]:
    """Each queue goes to the consumer whose virtual node follows the queue's hash on the ring;
    a consumer joining or leaving moves only the queues next to its virtual nodes."""
    if not check_allocate_arguments(current_cid, mq_all, cid_all):
        return []
    router = ConsistentHashRouter(cid_all, virtual_node_count, hash_function)
    return [mq for mq in mq_all if router.route_node(message_queue_key(mq)) == current_cid]


def message_queue_key(mq: MessageQueue) -> str:
    """Java's MessageQueue.toString(), the key RocketMQ hashes a queue by."""
    return f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"


def _java_string_order(text: str) -> bytes:
    """Sort key giving Java's String.compareTo order (UTF-16 code units), which differs from
    Python's code point order for characters beyond the Basic Multilingual Plane."""
    return text.encode("utf-16-be", "surrogatepass")


def _group_by_room(
    items: Iterable[_T], room_of: Callable[[_T], str | None], what: str
) -> dict[str, list[_T]]:
    groups: dict[str, list[_T]] = {}
    for item in items:
        room = room_of(item)
        if not room:
            raise ValueError(f"machine room is empty for {what} {item}")
        groups.setdefault(room, []).append(item)
    # RocketMQ groups in a TreeMap, so rooms are visited in sorted order.
    return {room: groups[room] for room in sorted(groups, key=_java_string_order)}


Allocation = Callable[[str, Sequence[MessageQueue], Sequence[str]], list[MessageQueue]]
"""A pure allocation: (current_cid, mq_all, cid_all) -> the queues of ``current_cid``."""


class _AllocateByFunction:
    """A named strategy that answers with a pure ``Allocation`` (the group plays no part).
    Immutable; safe from any thread when the allocation is."""

    def __init__(self, name: str, allocation: Allocation) -> None:
        self._name = name
        self._allocation = allocation

    @property
    def name(self) -> str:
        return self._name

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        return self._allocation(current_cid, mq_all, cid_all)


class AllocateMessageQueueAveragely(_AllocateByFunction):
    """RocketMQ's AllocateMessageQueueAveragely. Stateless; safe from any thread."""

    def __init__(self) -> None:
        super().__init__("AVG", allocate_averagely)


class AllocateMessageQueueAveragelyByCircle(_AllocateByFunction):
    """RocketMQ's AllocateMessageQueueAveragelyByCircle. Stateless; safe from any thread."""

    def __init__(self) -> None:
        super().__init__("AVG_BY_CIRCLE", allocate_averagely_by_circle)


class AllocateMessageQueueByConfig(_AllocateByFunction):
    """RocketMQ's AllocateMessageQueueByConfig: owns a fixed list of queues and answers it
    whatever the inputs, without even RocketMQ's argument checks. Immutable after
    construction; safe from any thread."""

    def __init__(self, message_queues: Iterable[MessageQueue]) -> None:
        self._message_queues = tuple(message_queues)
        super().__init__("CONFIG", lambda *_: list(self._message_queues))

    @property
    def message_queues(self) -> tuple[MessageQueue, ...]:
        return self._message_queues


class AllocateMessageQueueByMachineRoom(_AllocateByFunction):
    """RocketMQ's AllocateMessageQueueByMachineRoom: owns the set of machine rooms (idcs) whose
    brokers this group consumes from. Immutable; safe from any thread."""

    def __init__(self, consumer_idcs: Iterable[str]) -> None:
        self._consumer_idcs = frozenset(consumer_idcs)
        super().__init__(
            "MACHINE_ROOM", partial(allocate_by_machine_room, consumer_idcs=self._consumer_idcs)
        )

    @property
    def consumer_idcs(self) -> frozenset[str]:
        return self._consumer_idcs


class AllocateMachineRoomNearby:
    """RocketMQ's AllocateMachineRoomNearby: owns an inner strategy and a machine room resolver.

    Queues of a room that has live consumers go only to those consumers; queues of a room with
    none are shared by every consumer. The inner strategy splits each share. Safe from several
    threads if the inner strategy and the resolver are.
    """

    def __init__(
        self, strategy: AllocateMessageQueueStrategy, resolver: MachineRoomResolver
    ) -> None:
        self._strategy = strategy
        self._resolver = resolver

    @property
    def name(self) -> str:
        return f"MACHINE_ROOM_NEARBY-{self._strategy.name}"

    def allocate(
        self,
        consumer_group: str,
        current_cid: str,
        mq_all: Sequence[MessageQueue],
        cid_all: Sequence[str],
    ) -> list[MessageQueue]:
        if not check_allocate_arguments(current_cid, mq_all, cid_all):
            return []
        queues_by_room = _group_by_room(mq_all, self._resolver, "message queue")
        consumers_by_room = _group_by_room(cid_all, self._resolver, "consumer id")
        result: list[MessageQueue] = []
        # Never empty here: current_cid is one of cid_all, whose rooms were just checked.
        current_room = self._resolver(current_cid) or ""
        local_queues = queues_by_room.pop(current_room, [])
        if local_queues:
            result += self._strategy.allocate(
                consumer_group, current_cid, local_queues, consumers_by_room[current_room]
            )
        for room, queues in queues_by_room.items():
            if room not in consumers_by_room:
                result += self._strategy.allocate(consumer_group, current_cid, queues, cid_all)
        return result


class AllocateMessageQueueConsistentHash(_AllocateByFunction):
    """RocketMQ's AllocateMessageQueueConsistentHash: owns the virtual node count and the ring
    hash. Immutable; safe from any thread."""

    def __init__(self, virtual_node_count: int = 10, hash_function: HashFunction = md5_hash):
        if virtual_node_count < 0:
            raise ValueError(f"virtual_node_count must be >= 0, got {virtual_node_count}")
        super().__init__(
            "CONSISTENT_HASH",
            partial(
                allocate_consistent_hash,
                virtual_node_count=virtual_node_count,
                hash_function=hash_function,
            ),
        )
