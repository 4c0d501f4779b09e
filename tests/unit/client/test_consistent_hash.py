"""Consistent-hash allocation: the ring must be RocketMQ's bit for bit (a group may mix OrbitMQ
and Java consumers), and a consumer joining must move only the queues it takes over."""

from __future__ import annotations

import hashlib
from bisect import bisect_left

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.client import AllocateMessageQueueConsistentHash, ConsistentHashRouter, md5_hash
from orbitmq.common import MessageQueue

TOPIC_TEST_QUEUES = [
    MessageQueue("TopicTest", broker, i) for broker in ("broker-a", "broker-b") for i in range(4)
]
JAVA_CIDS = ["192.168.0.1@1", "192.168.0.2@1", "192.168.0.3@1"]


def reference_hash(key: str) -> int:
    """The first four bytes of MD5(key) as an unsigned big-endian number."""
    return int(hashlib.md5(key.encode()).hexdigest()[:8], 16)


def reference_owner(mq: MessageQueue, cid_all: list[str], virtual_nodes: int = 10) -> str:
    """Routes ``mq`` by building the ring straight from the definition: each client id is put
    at hash("<cid>-<i>") for i < virtual_nodes, and a queue goes to the first ring position at
    or after the hash of Java's MessageQueue.toString(), wrapping to the lowest."""
    ring = {reference_hash(f"{cid}-{i}"): cid for cid in cid_all for i in range(virtual_nodes)}
    positions = sorted(ring)
    key = f"MessageQueue [topic={mq.topic}, brokerName={mq.broker_name}, queueId={mq.queue_id}]"
    i = bisect_left(positions, reference_hash(key))
    return ring[positions[i % len(positions)]]


def shares(
    strategy: AllocateMessageQueueConsistentHash, mq_all: list[MessageQueue], cid_all: list[str]
) -> dict[str, list[str]]:
    return {
        c: [f"{mq.broker_name}:{mq.queue_id}" for mq in strategy.allocate("g", c, mq_all, cid_all)]
        for c in cid_all
    }


def test_md5_hash_is_the_first_four_digest_bytes_unsigned() -> None:
    # MD5("") = d41d8cd98f00b204e9800998ecf8427e: the top bit is set, and Java masks each byte
    # into a long, so the value is positive.
    assert md5_hash("") == 0xD41D8CD9  # 3558706393, above 2**31
    # MD5("c0-0") = 8a18b93e...
    assert md5_hash("c0-0") == 0x8A18B93E
    for key in ("c0-1", JAVA_CIDS[0] + "-9", "MessageQueue [topic=T, brokerName=b, queueId=0]"):
        assert md5_hash(key) == reference_hash(key)


def test_allocations_match_the_java_client() -> None:
    # Printed by RocketMQ 4.9.8's own AllocateMessageQueueConsistentHash for these inputs.
    assert shares(AllocateMessageQueueConsistentHash(), TOPIC_TEST_QUEUES, JAVA_CIDS) == {
        "192.168.0.1@1": ["broker-a:2"],
        "192.168.0.2@1": ["broker-a:1", "broker-b:0", "broker-b:1", "broker-b:3"],
        "192.168.0.3@1": ["broker-a:0", "broker-a:3", "broker-b:2"],
    }
    assert shares(AllocateMessageQueueConsistentHash(3), TOPIC_TEST_QUEUES, JAVA_CIDS) == {
        "192.168.0.1@1": ["broker-a:2"],
        "192.168.0.2@1": ["broker-a:1", "broker-b:1", "broker-b:3"],
        "192.168.0.3@1": ["broker-a:0", "broker-a:3", "broker-b:0", "broker-b:2"],
    }


def test_allocations_match_the_md5_definition() -> None:
    mq_all = [MessageQueue("OrderTopic", f"broker-{b}", i) for b in "abc" for i in range(8)]
    cid_all = [f"10.1.0.{i}@{1000 + i}" for i in range(5)]
    strategy = AllocateMessageQueueConsistentHash()
    for cid in cid_all:
        expected = [mq for mq in mq_all if reference_owner(mq, cid_all) == cid]
        assert strategy.allocate("g", cid, mq_all, cid_all) == expected


def test_a_duplicate_client_id_gets_the_next_replica_indexes() -> None:
    # RocketMQ numbers a node's virtual nodes after those already on the ring, so a client id
    # listed twice owns 2 x the virtual nodes (output of RocketMQ 4.9.8 with 2 virtual nodes).
    assert shares(AllocateMessageQueueConsistentHash(2), TOPIC_TEST_QUEUES, ["c0", "c0", "c1"]) == {
        "c0": ["broker-a:0", "broker-a:1", "broker-a:2", "broker-b:0", "broker-b:1", "broker-b:3"],
        "c1": ["broker-a:3", "broker-b:2"],
    }
    router = ConsistentHashRouter(["c0", "c0"], 2)
    assert router.existing_replicas("c0") == 4


def test_zero_virtual_nodes_allocate_nothing() -> None:
    strategy = AllocateMessageQueueConsistentHash(0)
    assert strategy.allocate("g", "c0", TOPIC_TEST_QUEUES, ["c0"]) == []


def test_router_add_and_remove() -> None:
    router = ConsistentHashRouter(["a"], 4)
    assert router.route_node("anything") == "a"
    router.add_node("b", 4)
    router.remove_node("a")
    assert router.existing_replicas("a") == 0
    assert router.route_node("anything") == "b"
    router.remove_node("b")
    assert router.route_node("anything") is None


def test_adding_a_consumer_moves_only_a_minority_of_queues() -> None:
    mq_all = [MessageQueue("T", f"broker-{b}", i) for b in "ab" for i in range(50)]
    before_cids = [f"client-{i}" for i in range(10)]
    after_cids = [*before_cids, "client-new"]
    strategy = AllocateMessageQueueConsistentHash()
    before = {mq: c for c in before_cids for mq in strategy.allocate("g", c, mq_all, before_cids)}
    after = {mq: c for c in after_cids for mq in strategy.allocate("g", c, mq_all, after_cids)}
    moved = [mq for mq in mq_all if before[mq] != after[mq]]
    assert len(moved) < len(mq_all) // 3
    assert all(after[mq] == "client-new" for mq in moved)


@settings(max_examples=60, deadline=None)
@given(
    queue_count=st.integers(1, 60),
    cids=st.lists(
        st.text("abcdef0123456789.@", min_size=1, max_size=12), min_size=1, max_size=8, unique=True
    ),
    newcomer=st.text("ghijk", min_size=1, max_size=6),
)
def test_queues_that_move_on_a_join_all_move_to_the_newcomer(
    queue_count: int, cids: list[str], newcomer: str
) -> None:
    mq_all = [MessageQueue("T", "broker-a", i) for i in range(queue_count)]
    strategy = AllocateMessageQueueConsistentHash()
    after_cids = sorted([*cids, newcomer])
    before = {mq: c for c in cids for mq in strategy.allocate("g", c, mq_all, sorted(cids))}
    after = {mq: c for c in after_cids for mq in strategy.allocate("g", c, mq_all, after_cids)}
    assert all(after[mq] in (before[mq], newcomer) for mq in mq_all)
