"""Exactly-once commit intents: their encoding in chunks (each half with its id), found whole
or not at all; intents recorded before halves had ids still read."""

from __future__ import annotations

import pytest

from orbitmq.spark.commit_intent import decode_intent, encode_intent
from orbitmq.spark.staged_batch import StagedBatch


def staged(n: int) -> list[StagedBatch]:
    return [
        StagedBatch(
            f"broker-{'ab'[i % 2]}", f"T{i % 3}", i % 4, 1000 + i, 50_000 + 300 * i, f"{i:032X}"
        )
        for i in range(n)
    ]


def test_intents_round_trip_in_row_order() -> None:
    rows = staged(1000)
    chunks = encode_intent(rows)
    assert len(chunks) == 1 and len(chunks[0]) < 80 * 1000  # queues named once per chunk
    assert decode_intent(chunks) == rows


@pytest.mark.slow
def test_big_intents_are_cut_into_chunks_under_the_message_limit() -> None:
    rows = staged(120_000)
    chunks = encode_intent(rows)
    assert len(chunks) == 3 and all(len(c) < 4 * 1024 * 1024 for c in chunks)
    assert decode_intent(chunks) == rows
    assert decode_intent(encode_intent([])) == []


def test_intents_recorded_before_halves_had_ids_still_decode() -> None:
    old = b'{"queues":[["broker-a","T",0]],"halves":[[0,7,4096,"AB"]]}'
    assert decode_intent([old]) == [StagedBatch("broker-a", "T", 0, 7, 4096, "AB", "")]
    with_id = staged(1)[0]
    assert decode_intent(encode_intent([with_id]))[0].half_id == ""
    named = StagedBatch("broker-a", "T", 0, 7, 4096, "AB", "f00d")
    assert decode_intent(encode_intent([named])) == [named]
