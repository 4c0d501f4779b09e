"""A commit whose final message is stored but not flushed in time (SYNC_FLUSH answering
FLUSH_DISK_TIMEOUT) is a commit done, as RocketMQ's EndTransactionProcessor.sendFinalMessage
counts it: the half is resolved, so a repeated verdict (a producer's retry, a check's answer)
stores nothing again."""

from __future__ import annotations

import pytest

from orbitmq.broker.transactional_message_service import TransactionalMessageService
from orbitmq.common import message_const as mc
from orbitmq.common import message_properties_to_string
from orbitmq.common import sys_flag as sf
from orbitmq.protocol import ResponseCode
from orbitmq.protocol.header import EndTransactionRequestHeader
from orbitmq.store import FlushDiskType, PutMessageStatus
from orbitmq.testing import FaultInjectingFileSystem
from tests.conftest import StoreFactory
from tests.support import make_message

pytestmark = pytest.mark.timeout(30)

GROUP = "tx-flush-pg"


async def test_a_commit_stored_but_not_flushed_in_time_is_done_once(
    store_factory: StoreFactory,
) -> None:
    fs = FaultInjectingFileSystem()
    store = store_factory(fs=fs, flush_disk_type=FlushDiskType.SYNC_FLUSH, sync_flush_timeout=200)
    service = TransactionalMessageService(store)
    properties = {mc.PROPERTY_TRANSACTION_PREPARED: "true", mc.PROPERTY_PRODUCER_GROUP: GROUP}
    msg = make_message("TxTopic", b"paid", properties=properties)
    msg.properties_string = message_properties_to_string(msg.properties)  # as a send has it
    half = service.to_half(msg)
    stored = await store.async_put_message(half)
    assert stored.status is PutMessageStatus.PUT_OK and stored.append_result is not None
    commit = EndTransactionRequestHeader(
        producer_group=GROUP,
        tran_state_table_offset=stored.append_result.logics_offset,
        commit_log_offset=stored.append_result.wrote_offset,
        commit_or_rollback=sf.TRANSACTION_COMMIT_TYPE,
        msg_id=half.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX],
    )

    fs.hold_syncs()  # the disk does not answer: the final message's put times out
    try:
        assert await service.end(commit) == (ResponseCode.SUCCESS, None)
    finally:
        fs.release_syncs()
    assert service.is_resolved(stored.append_result.logics_offset)

    assert await service.end(commit) == (ResponseCode.SUCCESS, None)  # the verdict again
    assert store.wait_for_dispatch()
    assert store.get_message("g", "TxTopic", 0, 0, 32).message_count == 1
