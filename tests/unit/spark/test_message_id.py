"""The sink's message ids: fixed by (write id, batch id, partition, sequence)."""

from __future__ import annotations

from orbitmq.spark.message_writer import message_id


def test_ids_are_32_hex_digits_fixed_by_position() -> None:
    first = message_id("q-1", 7, 3, 0)
    assert first == message_id("q-1", 7, 3, 0)
    assert len(first) == 32 and first == first.upper() and int(first, 16) >= 0
    others = {
        message_id("q-2", 7, 3, 0),
        message_id("q-1", 8, 3, 0),
        message_id("q-1", 7, 4, 0),
        message_id("q-1", 7, 3, 1),
    }
    assert first not in others and len(others) == 4
    # Pinned: ids written by one version must be what the next version writes on a replay.
    assert message_id("query", 1, 0, 0) == "D45699D012E72E319C9EEA151304DEB5"
