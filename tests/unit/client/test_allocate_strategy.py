"""Queue allocation strategies: RocketMQ's rebalance tables and the properties every consumer
group relies on (all queues covered, none twice, same answer on every member)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.client import (
    AllocateMachineRoomNearby,
    AllocateMessageQueueAveragely,
    AllocateMessageQueueAveragelyByCircle,
    AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom,
    AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy,
)
from orbitmq.common import MessageQueue


def queues(count: int, broker: str = "broker-a", topic: str = "T") -> list[MessageQueue]:
    return [MessageQueue(topic, broker, i) for i in range(count)]


def consumers(count: int) -> list[str]:
    # Zero-padded so that the sorted order (RocketMQ sorts client ids) is the numeric order.
    return [f"c{i:02d}" for i in range(count)]


def split(
    strategy: AllocateMessageQueueStrategy, mq_all: Sequence[MessageQueue], cid_all: list[str]
) -> list[list[int]]:
    return [[mq.queue_id for mq in strategy.allocate("g", c, mq_all, cid_all)] for c in cid_all]


def machine_room(target: MessageQueue | str) -> str:
    """Brokers are named "<room>@<name>", consumers "<room>-<n>"."""
    if isinstance(target, MessageQueue):
        return target.broker_name.split("@")[0]
    return target.split("-")[0]


# --- the seed tables --------------------------------------------------------------------------


def test_averagely_16_queues_3_consumers() -> None:
    assert split(AllocateMessageQueueAveragely(), queues(16), consumers(3)) == [
        [0, 1, 2, 3, 4, 5],
        [6, 7, 8, 9, 10],
        [11, 12, 13, 14, 15],
    ]


def test_by_circle_16_queues_3_consumers() -> None:
    assert split(AllocateMessageQueueAveragelyByCircle(), queues(16), consumers(3)) == [
        [0, 3, 6, 9, 12, 15],
        [1, 4, 7, 10, 13],
        [2, 5, 8, 11, 14],
    ]


@pytest.mark.parametrize(
    ("queue_count", "consumer_count", "sizes"),
    [
        (5, 2, [3, 2]),
        (6, 3, [2, 2, 2]),
        (10, 20, [1] * 10 + [0] * 10),
        (20, 6, [4, 4, 3, 3, 3, 3]),
    ],
)
def test_averagely_share_sizes(queue_count: int, consumer_count: int, sizes: list[int]) -> None:
    shares = split(AllocateMessageQueueAveragely(), queues(queue_count), consumers(consumer_count))
    assert [len(share) for share in shares] == sizes


def test_averagely_10_queues_20_consumers_gives_the_first_ten_one_each() -> None:
    shares = split(AllocateMessageQueueAveragely(), queues(10), consumers(20))
    assert shares == [[i] for i in range(10)] + [[]] * 10


def test_averagely_20_queues_6_consumers_blocks() -> None:
    assert split(AllocateMessageQueueAveragely(), queues(20), consumers(6)) == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 10],
        [11, 12, 13],
        [14, 15, 16],
        [17, 18, 19],
    ]


# --- names and argument checks ----------------------------------------------------------------

NEARBY = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), machine_room)
CHECKED: list[AllocateMessageQueueStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueByMachineRoom({"hz"}),
    NEARBY,
    AllocateMessageQueueConsistentHash(),
]


def test_names_are_rocketmqs() -> None:
    assert [s.name for s in CHECKED] == [
        "AVG",
        "AVG_BY_CIRCLE",
        "MACHINE_ROOM",
        "MACHINE_ROOM_NEARBY-AVG",
        "CONSISTENT_HASH",
    ]
    assert AllocateMessageQueueByConfig([]).name == "CONFIG"
    inner = AllocateMessageQueueConsistentHash()
    assert (
        AllocateMachineRoomNearby(inner, machine_room).name == "MACHINE_ROOM_NEARBY-CONSISTENT_HASH"
    )


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.name)
def test_empty_inputs_are_misuse(strategy: AllocateMessageQueueStrategy) -> None:
    mqs = queues(2, "hz@a")
    with pytest.raises(ValueError, match="current_cid"):
        strategy.allocate("g", "", mqs, ["hz-1"])
    with pytest.raises(ValueError, match="mq_all"):
        strategy.allocate("g", "hz-1", [], ["hz-1"])
    with pytest.raises(ValueError, match="cid_all"):
        strategy.allocate("g", "hz-1", mqs, [])


@pytest.mark.parametrize("strategy", CHECKED, ids=lambda s: s.name)
def test_a_consumer_missing_from_the_group_gets_nothing(
    strategy: AllocateMessageQueueStrategy,
) -> None:
    assert strategy.allocate("g", "hz-9", queues(4, "hz@a"), ["hz-1", "hz-2"]) == []


def test_consistent_hash_rejects_a_negative_virtual_node_count() -> None:
    with pytest.raises(ValueError, match="virtual_node_count"):
        AllocateMessageQueueConsistentHash(-1)


# --- by config --------------------------------------------------------------------------------


def test_by_config_answers_its_list_whatever_the_inputs() -> None:
    configured = [MessageQueue("T", "b", 3), MessageQueue("T", "b", 1)]
    strategy = AllocateMessageQueueByConfig(configured)
    assert strategy.allocate("g", "anyone", queues(8), ["c0", "c1"]) == configured
    # RocketMQ's by-config strategy skips even the argument checks.
    assert strategy.allocate("g", "", [], []) == configured


# --- machine rooms ----------------------------------------------------------------------------

ROOM_QUEUES = [
    MessageQueue("T", broker, i)
    for broker in ("hz@broker-a", "sh@broker-b", "bj@broker-c")
    for i in range(3)
]


def ids(mqs: list[MessageQueue]) -> list[str]:
    return [f"{mq.broker_name}:{mq.queue_id}" for mq in mqs]


def test_by_machine_room_takes_only_the_listed_rooms() -> None:
    # Golden output of RocketMQ 4.9.8's AllocateMessageQueueByMachineRoom on the same input.
    mq_all = [*ROOM_QUEUES, MessageQueue("T", "hz@x@", 0), MessageQueue("T", "plain", 0)]
    strategy = AllocateMessageQueueByMachineRoom({"hz", "bj"})
    cid_all = ["c1", "c2", "c3", "c4"]
    shares = [ids(strategy.allocate("g", c, mq_all, cid_all)) for c in cid_all]
    assert shares == [
        ["hz@broker-a:0", "bj@broker-c:1"],
        ["hz@broker-a:1", "bj@broker-c:2"],
        # Java's split drops the trailing empty part, so "hz@x@" counts as room "hz".
        ["hz@broker-a:2", "hz@x@:0"],
        ["bj@broker-c:0"],
    ]


def test_nearby_keeps_queues_in_their_room_and_shares_orphaned_rooms() -> None:
    # Golden output of RocketMQ 4.9.8's AllocateMachineRoomNearby(Averagely) on the same input.
    cid_all = ["hz-1", "hz-2", "sh-1"]
    shares = [ids(NEARBY.allocate("g", c, ROOM_QUEUES, cid_all)) for c in cid_all]
    assert shares == [
        ["hz@broker-a:0", "hz@broker-a:1", "bj@broker-c:0"],
        ["hz@broker-a:2", "bj@broker-c:1"],
        ["sh@broker-b:0", "sh@broker-b:1", "sh@broker-b:2", "bj@broker-c:2"],
    ]


def test_nearby_rejects_an_unresolved_machine_room() -> None:
    strategy = AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), lambda _: None)
    with pytest.raises(ValueError, match="machine room is empty"):
        strategy.allocate("g", "hz-1", ROOM_QUEUES, ["hz-1"])


# --- properties -------------------------------------------------------------------------------

ROOMS = ["bj", "hz", "sh"]


@st.composite
def group_inputs(draw: st.DrawFn) -> tuple[list[MessageQueue], list[str]]:
    """A sorted, duplicate-free queue list and client id list, as RocketMQ's caller passes."""
    mq_all = draw(
        st.sets(
            st.builds(
                MessageQueue,
                st.sampled_from(["TopicA", "TopicB"]),
                st.builds(
                    lambda room, b: f"{room}@broker-{b}", st.sampled_from(ROOMS), st.integers(0, 3)
                ),
                st.integers(0, 15),
            ),
            min_size=1,
            max_size=40,
        )
    )
    cid_all = draw(
        st.sets(
            st.builds(lambda room, n: f"{room}-{n}", st.sampled_from(ROOMS), st.integers(0, 30)),
            min_size=1,
            max_size=25,
        )
    )
    return sorted(mq_all), sorted(cid_all)


PARTITIONING: list[AllocateMessageQueueStrategy] = [
    AllocateMessageQueueAveragely(),
    AllocateMessageQueueAveragelyByCircle(),
    AllocateMessageQueueConsistentHash(),
    AllocateMessageQueueConsistentHash(1),
    AllocateMachineRoomNearby(AllocateMessageQueueAveragely(), machine_room),
    AllocateMachineRoomNearby(AllocateMessageQueueAveragelyByCircle(), machine_room),
    AllocateMachineRoomNearby(AllocateMessageQueueConsistentHash(), machine_room),
]


def assert_partition(shares: list[list[MessageQueue]], expected: list[MessageQueue]) -> None:
    flat = [mq for share in shares for mq in share]
    assert len(flat) == len(set(flat)), "a queue was given to two consumers"
    assert sorted(flat) == sorted(expected)


@pytest.mark.parametrize("strategy", PARTITIONING, ids=lambda s: s.name)
@settings(max_examples=60, deadline=None)
@given(inputs=group_inputs())
def test_every_queue_goes_to_exactly_one_consumer(
    strategy: AllocateMessageQueueStrategy, inputs: tuple[list[MessageQueue], list[str]]
) -> None:
    mq_all, cid_all = inputs
    shares = [strategy.allocate("g", c, mq_all, cid_all) for c in cid_all]
    assert_partition(shares, mq_all)
    # Deterministic: every member of the group computes the same answer.
    assert shares == [strategy.allocate("g", c, list(mq_all), list(cid_all)) for c in cid_all]


@settings(max_examples=60, deadline=None)
@given(inputs=group_inputs(), idcs=st.sets(st.sampled_from(ROOMS)))
def test_by_machine_room_partitions_the_queues_of_its_rooms(
    inputs: tuple[list[MessageQueue], list[str]], idcs: set[str]
) -> None:
    mq_all, cid_all = inputs
    strategy = AllocateMessageQueueByMachineRoom(idcs)
    shares = [strategy.allocate("g", c, mq_all, cid_all) for c in cid_all]
    assert_partition(shares, [mq for mq in mq_all if mq.broker_name.split("@")[0] in idcs])
    assert shares == [strategy.allocate("g", c, mq_all, cid_all) for c in cid_all]


@settings(max_examples=60, deadline=None)
@given(inputs=group_inputs())
def test_averagely_shares_differ_by_at_most_one(
    inputs: tuple[list[MessageQueue], list[str]],
) -> None:
    mq_all, cid_all = inputs
    for strategy in (AllocateMessageQueueAveragely(), AllocateMessageQueueAveragelyByCircle()):
        sizes = [len(strategy.allocate("g", c, mq_all, cid_all)) for c in cid_all]
        assert max(sizes) - min(sizes) <= 1
        assert sizes == sorted(sizes, reverse=True)
