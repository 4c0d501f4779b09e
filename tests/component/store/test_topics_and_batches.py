"""Dropping a topic's consume queues, and batches put from an event loop."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common import Message, MessageExtBatch, decode_message, encode_batch_messages
from orbitmq.store import FlushDiskType, GetMessageStatus, PutMessageStatus
from tests.conftest import StoreFactory
from tests.support import make_message


def test_delete_topics_drops_their_queues_and_restarts_their_offsets(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    store = store_factory()
    for queue_id in (0, 1):
        assert store.put_message(make_message("Doomed", queue_id=queue_id)).is_ok
    assert store.put_message(make_message("Kept")).is_ok
    assert store.wait_for_dispatch()

    assert store.delete_topics({"Doomed"}) == 2

    assert not (tmp_path / "store" / "consumequeue" / "Doomed").exists()
    missing = store.get_message("g", "Doomed", 0, 0, 32)
    assert missing.status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    assert store.get_message("g", "Kept", 0, 0, 32).status is GetMessageStatus.FOUND
    again = store.put_message(make_message("Doomed"))
    assert again.append_result is not None
    assert again.append_result.logics_offset == 0


async def test_async_put_messages_stores_a_batch_under_sync_flush(
    store_factory: StoreFactory,
) -> None:
    store = store_factory(flush_disk_type=FlushDiskType.SYNC_FLUSH)
    bodies = [f"b{i}".encode() for i in range(5)]
    batch = MessageExtBatch(
        topic="BatchTopic",
        queue_id=0,
        body=encode_batch_messages([Message("BatchTopic", b) for b in bodies]),
    )
    result = await store.async_put_messages(batch)
    assert result.status is PutMessageStatus.PUT_OK
    assert result.append_result is not None
    assert result.append_result.msg_num == 5
    assert store.commit_log.mapped_file_queue.flushed_where >= store.max_phy_offset
    assert store.wait_for_dispatch()
    got = store.get_message("g", "BatchTopic", 0, 0, 32)
    assert [decode_message(b).body for b in got.message_buffers] == bodies
