"""RocketMQ's ConsistentHashRouter: physical nodes spread over a hash ring as virtual nodes.

The default hash must match the Java client's bit for bit, because a group may mix OrbitMQ and
Java consumers and every member has to compute the same ring to agree on who owns a queue.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Iterable

HashFunction = Callable[[str], int]
"""Maps a key to a position on the ring (RocketMQ's HashFunction)."""


def md5_hash(key: str) -> int:
    """RocketMQ's default ring hash: the first four MD5 bytes of the key, big-endian, unsigned.

    Java takes ``key.getBytes()`` in the platform charset; UTF-8 is what every deployment we
    target runs with, and the two agree on ASCII, which covers client ids and queue names.
    """
    digest = hashlib.md5(key.encode("utf-8"), usedforsecurity=False).digest()
    return int.from_bytes(digest[:4], "big")


class ConsistentHashRouter:
    """Owns one hash ring of node keys (strings) and routes object keys to the nearest node.

    Built once per rebalance and then only read; not safe to mutate from several threads.
    """

    def __init__(
        self,
        node_keys: Iterable[str],
        virtual_node_count: int,
        hash_function: HashFunction = md5_hash,
    ) -> None:
        self._hash = hash_function
        # position -> physical node key; a later virtual node that lands on an occupied position
        # replaces the earlier one, as in Java's TreeMap.put.
        self._ring: dict[int, str] = {}
        self._positions: list[int] = []
        for node_key in node_keys:
            self.add_node(node_key, virtual_node_count)

    def add_node(self, node_key: str, virtual_node_count: int) -> None:
        """Put ``virtual_node_count`` replicas of ``node_key`` on the ring.

        Replica indexes continue after the replicas already present, so adding the same node
        twice (a duplicate client id) gives it the next indexes rather than the same positions.
        """
        if virtual_node_count < 0:
            raise ValueError(f"virtual_node_count must be >= 0, got {virtual_node_count}")
        existing = self.existing_replicas(node_key)
        for i in range(virtual_node_count):
            self._ring[self._hash(f"{node_key}-{i + existing}")] = node_key
        self._positions = sorted(self._ring)

    def remove_node(self, node_key: str) -> None:
        """Take every virtual node of ``node_key`` off the ring."""
        self._ring = {pos: key for pos, key in self._ring.items() if key != node_key}
        self._positions = sorted(self._ring)

    def existing_replicas(self, node_key: str) -> int:
        """How many virtual nodes of ``node_key`` are on the ring now."""
        return sum(1 for key in self._ring.values() if key == node_key)

    def route_node(self, object_key: str) -> str | None:
        """The node at the first position at or after the key's hash, wrapping around; ``None``
        when the ring is empty."""
        if not self._positions:
            return None
        i = bisect_left(self._positions, self._hash(object_key))
        position = self._positions[i] if i < len(self._positions) else self._positions[0]
        return self._ring[position]
