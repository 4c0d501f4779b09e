"""The store end to end in one process: put, dispatch, read back, restart."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common import decode_message
from orbitmq.store import GetMessageStatus, PutMessageStatus
from tests.conftest import StoreFactory
from tests.support import make_message


def test_put_then_read_back_after_restart(store_factory: StoreFactory, tmp_path: Path) -> None:
    store = store_factory()
    for i in range(10):
        result = store.put_message(make_message(body=f"m{i}".encode(), tags="TagA"))
        assert result.status is PutMessageStatus.PUT_OK
        assert result.append_result is not None
        assert result.append_result.logics_offset == i
    assert store.wait_for_dispatch()
    store.shutdown()

    reopened = store_factory()
    got = reopened.get_message("group", "TopicTest", 0, 0, 32)
    assert got.status is GetMessageStatus.FOUND
    assert [decode_message(b).body for b in got.message_buffers] == [
        f"m{i}".encode() for i in range(10)
    ]
    assert reopened.recovery_report is not None
    assert not reopened.recovery_report.abnormal
