"""Dispatch of a round into the consume queues: each queue's units of the round are one
``put_units`` (one packed write per file), whatever order its records came in."""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from orbitmq.common import OS_FILE_SYSTEM, sys_flag
from orbitmq.store import ConsumeQueue, DispatchBatch, MessageStore, consume_queue
from orbitmq.store.commit_log_dispatcher import CommitLogDispatcherBuildConsumeQueue
from tests.component.store.records import (
    file_name,
    java_hash,
    list_files,
    read_bodies,
    read_cq_units,
)
from tests.conftest import StoreFactory
from tests.support import make_message

Unit = tuple[int, int, int]


class Writes:
    """Counts how units reach the files: packed runs (their lengths) and single units."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.packed: list[int] = []
        self.single = 0
        pack = consume_queue._pack_units
        put_one = ConsumeQueue.put_message_position_info

        def packed(offsets: Sequence[int], sizes: Sequence[int], tags: Sequence[int]) -> bytes:
            self.packed.append(len(offsets))
            return pack(offsets, sizes, tags)

        def single(queue: ConsumeQueue, offset: int, size: int, tags: int, cq: int) -> bool:
            self.single += 1
            return put_one(queue, offset, size, tags, cq)

        monkeypatch.setattr(consume_queue, "_pack_units", packed)
        monkeypatch.setattr(ConsumeQueue, "put_message_position_info", single)


def _put(store: MessageStore, topic: str, queue_id: int, tags: str) -> Unit:
    result = store.put_message(
        make_message(topic, f"{topic}-{tags}".encode(), queue_id=queue_id, tags=tags)
    )
    assert result.append_result is not None
    return result.append_result.wrote_offset, result.append_result.wrote_bytes, java_hash(tags)


def _units_on_disk(store: MessageStore, topic: str, queue_id: int) -> list[Unit]:
    directory = Path(store.config.consume_queue_dir) / topic / str(queue_id)
    return [unit for name in list_files(directory) for unit in read_cq_units(directory / name)]


def test_a_round_crossing_consume_queue_files_writes_each_files_share_at_once(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ten units a file; two queues hold one unit each, then one round brings 24 more to each,
    interleaved: per queue the rest of the first file, a whole second file and five units of a
    third, each in one packed write, at the right offsets."""
    store = store_factory(start=False, mapped_file_size_consume_queue=10 * 20)
    expected: dict[int, list[Unit]] = {0: [], 1: []}
    for queue_id in (0, 1):
        expected[queue_id].append(_put(store, "TopicTest", queue_id, "first"))
    assert store.reput_message_service.do_reput() == 2
    for i in range(24):
        for queue_id in (0, 1):
            expected[queue_id].append(_put(store, "TopicTest", queue_id, f"Tag{i % 3}"))
    writes = Writes(monkeypatch)
    assert store.reput_message_service.do_reput() == 48
    assert sorted(writes.packed) == [5, 5, 9, 9, 10, 10]
    assert writes.single == 0
    for queue_id in (0, 1):
        directory = Path(store.config.consume_queue_dir) / "TopicTest" / str(queue_id)
        assert list_files(directory) == [file_name(0), file_name(200), file_name(400)]
        assert _units_on_disk(store, "TopicTest", queue_id) == expected[queue_id]
        assert store.get_max_offset_in_queue("TopicTest", queue_id) == 25
        # Read across both file boundaries through the store.
        assert read_bodies(store, "TopicTest", queue_id) == (
            [b"TopicTest-first"] + [f"TopicTest-Tag{i % 3}".encode() for i in range(24)]
        )


def test_topics_and_queues_interleaved_in_one_round(
    store_factory: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nine queues of three topics, their 90 records shuffled in the log: each queue's units
    land in log order at its offsets, one packed write per queue (its first unit, which creates
    the file, goes alone), and the arrival listener hears each queue once for the round, in
    the order the queues first appear, with the queue's new max offset and its tag codes."""
    calls: list[tuple[str, int, int, frozenset[int]]] = []

    def listener(topic: str, queue_id: int, max_offset: int, codes: frozenset[int]) -> None:
        calls.append((topic, queue_id, max_offset, codes))

    store = store_factory(start=False)
    store.reput_message_service.listener = listener
    queues = [(f"Topic{t}", q) for t in range(3) for q in (0, 3, 7)]
    order = [queue for queue in queues for _ in range(10)]
    random.Random(16).shuffle(order)
    expected: dict[tuple[str, int], list[Unit]] = {queue: [] for queue in queues}
    for i, (topic, queue_id) in enumerate(order):
        expected[(topic, queue_id)].append(_put(store, topic, queue_id, f"Tag{i % 4}"))
    writes = Writes(monkeypatch)
    assert store.reput_message_service.do_reput() == 90
    assert writes.single == len(queues)
    assert writes.packed == [9] * len(queues)
    for (topic, queue_id), units in expected.items():
        assert _units_on_disk(store, topic, queue_id) == units
        assert store.get_max_offset_in_queue(topic, queue_id) == 10
    first_seen = list(dict.fromkeys(order))
    assert [call[:3] for call in calls] == [(topic, q, 10) for topic, q in first_seen]
    for topic, queue_id, _max, codes in calls:
        assert codes == {unit[2] for unit in expected[(topic, queue_id)]}
    assert store.reput_message_service.do_reput() == 0
    assert len(calls) == len(queues)  # nothing new, nothing announced


def _batch(rows: list[tuple[int, int, int]]) -> DispatchBatch:
    """Records of topic T at 100-byte steps: (queue id, queue offset, sys flag) each."""
    return DispatchBatch(
        commit_log_offsets=[100 * i for i in range(len(rows))],
        sizes=[100] * len(rows),
        queue_ids=[row[0] for row in rows],
        queue_offsets=[row[1] for row in rows],
        store_timestamps=[0] * len(rows),
        sys_flags=[row[2] for row in rows],
        tags_codes=[row[1] for row in rows],
        topics=["T"] * len(rows),
        keys=[None] * len(rows),
        uniq_keys=[None] * len(rows),
    )


def test_prepared_records_and_jumping_offsets_within_a_round(tmp_path: Path) -> None:
    """A prepared half is left out; a queue whose offsets jump in the round gets each unit
    at its offset (filler units in the gap); the same round dispatched again (a round that
    failed part-way) changes nothing; each queue is marked for the flush once a round."""
    prepared, committed = sys_flag.TRANSACTION_PREPARED_TYPE, sys_flag.TRANSACTION_COMMIT_TYPE
    batch = _batch(
        [
            (0, 0, 0),
            (1, 0, 0),
            (0, 1, 0),
            (0, 9, prepared),
            (0, 2, committed),
            (1, 1, 0),
            (0, 5, 0),
            (0, 6, 0),
        ]
    )
    assert batch.queue_rows() == {("T", 0): [0, 2, 4, 6, 7], ("T", 1): [1, 5]}
    queues: dict[int, ConsumeQueue] = {}
    marked: list[int] = []

    def get_queue(topic: str, queue_id: int) -> ConsumeQueue:
        if queue_id not in queues:
            queues[queue_id] = ConsumeQueue(
                topic, queue_id, str(tmp_path), 20 * 100, OS_FILE_SYSTEM
            )
        return queues[queue_id]

    dispatcher = CommitLogDispatcherBuildConsumeQueue(
        get_queue, lambda q: marked.append(q.queue_id)
    )
    blank = (0, consume_queue.BLANK_UNIT_SIZE, 0)
    for _ in range(2):
        dispatcher.dispatch(batch)
        assert read_cq_units(tmp_path / "T" / "0" / file_name(0)) == [
            (0, 100, 0),
            (200, 100, 1),
            (400, 100, 2),
            blank,
            blank,
            (600, 100, 5),
            (700, 100, 6),
        ]
        assert read_cq_units(tmp_path / "T" / "1" / file_name(0)) == [(100, 100, 0), (500, 100, 1)]
        assert queues[0].max_offset_in_queue == 7
        assert queues[0].max_physic_offset == 800
    assert marked == [0, 1, 0, 1]
    for queue in queues.values():
        queue.shutdown()
