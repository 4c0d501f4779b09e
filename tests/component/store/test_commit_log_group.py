"""CommitLog.put_message_group: several messages of any topics and queues with one write per
file, each with the queue offset and record a single put would give it."""

from __future__ import annotations

from orbitmq.common import decode_message
from orbitmq.store import PutMessageStatus
from tests.conftest import StoreFactory
from tests.support import make_message


def test_group_put_across_queues_and_files(store_factory: StoreFactory) -> None:
    # 256 KiB commit log files: 300 messages of 2 KiB cross two file ends.
    store = store_factory(start=False)
    assert store.put_message(make_message("A", b"first", queue_id=0)).is_ok
    msgs = [
        make_message("A" if i % 3 else "B", b"%05d" % i + b"x" * 2000, queue_id=i % 2)
        for i in range(300)
    ]
    results = store.put_message_group(msgs)
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    assert len(store.commit_log.mapped_file_queue.mapped_files) == 3
    expected: dict[tuple[str, int], int] = {("A", 0): 1}
    for msg, result in zip(msgs, results, strict=True):
        key = (msg.topic, msg.queue_id)
        assert result.append_result is not None
        assert result.append_result.logics_offset == expected.get(key, 0)
        expected[key] = expected.get(key, 0) + 1
        record = store.select_one_message_by_offset(result.append_result.wrote_offset)
        assert record is not None
        stored = decode_message(record)
        assert (stored.topic, stored.queue_id, stored.body) == (msg.topic, msg.queue_id, msg.body)
        assert stored.queue_offset == result.append_result.logics_offset
    store.reput_message_service.do_reput()
    for (topic, queue_id), count in expected.items():
        assert store.get_max_offset_in_queue(topic, queue_id) == count


def test_group_put_refuses_each_bad_message_alone(store_factory: StoreFactory) -> None:
    store = store_factory(start=False)
    results = store.put_message_group(
        [make_message("A", b"ok"), make_message("bad topic!", b"no"), make_message("A", b"ok2")]
    )
    assert [r.status for r in results] == [
        PutMessageStatus.PUT_OK,
        PutMessageStatus.MESSAGE_ILLEGAL,
        PutMessageStatus.PUT_OK,
    ]
    assert [r.append_result.logics_offset for r in (results[0], results[2])] == [0, 1]  # type: ignore[union-attr]


def test_group_put_dispatched_inline_is_in_its_queues_when_it_returns(
    store_factory: StoreFactory,
) -> None:
    # No reput thread runs: only the inline dispatch can have moved the queues.
    store = store_factory(start=False)
    msgs = [make_message("A", b"%d" % i, queue_id=i % 2) for i in range(5)]
    results = store.put_message_group(msgs, dispatch_inline=True)
    assert all(r.is_ok for r in results)
    assert store.get_max_offset_in_queue("A", 0) == 3
    assert store.get_max_offset_in_queue("A", 1) == 2
    assert store.reput_message_service.behind_bytes == 0
