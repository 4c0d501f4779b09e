"""A power loss: what was never synced is gone (issue 14, the FileSystem seam).

Under SYNC_FLUSH a put is acknowledged once its bytes are synced. The store runs on a
FaultInjectingFileSystem that tracks what each sync made durable; the power goes
(``crash``), the store's files are closed without saving more, every file is put back to
its synced content (``drop_unsynced``) and the store opens again on the abnormal path.
Every acknowledged message must be there, in its queue and at its offset.
"""

from __future__ import annotations

from pathlib import Path

from orbitmq.store import FlushDiskType, GetMessageStatus, PutMessageStatus
from orbitmq.testing import FaultInjectingFileSystem
from tests.component.store.records import parse_record, read_bodies
from tests.conftest import StoreFactory
from tests.support import make_message

TOPIC = "PowerLossTopic"
QUEUES = 2
MESSAGES = 120
OVERRIDES = {
    "flush_disk_type": FlushDiskType.SYNC_FLUSH,
    "mapped_file_size_commit_log": 32 * 1024,
    "mapped_file_size_consume_queue": 20 * 40,
    # Consume queues and the checkpoint are flushed rarely: the loss reaches them.
    "flush_interval_consume_queue": 3_600_000,
}


def _body(i: int) -> bytes:
    return f"acknowledged-{i:04d}-".encode() + bytes([65 + i % 26]) * (200 + i % 300)


def test_every_message_acknowledged_under_sync_flush_survives_a_power_loss(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    fs = FaultInjectingFileSystem(track_unsynced=True)
    store = store_factory(root, fs=fs, **OVERRIDES)
    acknowledged: dict[int, list[bytes]] = {q: [] for q in range(QUEUES)}
    for i in range(MESSAGES):
        result = store.put_message(make_message(TOPIC, _body(i), queue_id=i % QUEUES))
        assert result.status is PutMessageStatus.PUT_OK, result.status
        acknowledged[i % QUEUES].append(_body(i))
    assert store.wait_for_dispatch()
    assert store.commit_log.mapped_file_queue.mapped_files[-1].file_from_offset > 0

    fs.crash()
    store.shutdown()
    (root / "abort").touch()  # the process never got to remove it
    dropped = fs.drop_unsynced()
    assert any("consumequeue" in path for path in dropped), dropped  # the loss was real

    reopened = store_factory(root, **OVERRIDES)
    report = reopened.recovery_report
    assert report is not None
    assert report.abnormal
    for queue_id, bodies in acknowledged.items():
        assert read_bodies(reopened, TOPIC, queue_id) == bodies, (queue_id, report)
    got = reopened.get_message("g", TOPIC, 0, 0, 1)
    assert got.status is GetMessageStatus.FOUND
    assert parse_record(got.message_buffers[0]).body == _body(0)
