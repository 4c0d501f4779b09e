"""SYNC_MASTER's wait for a slave (issue 16 §3), on real stores and sockets: a put is
answered PUT_OK only once a slave reported an offset past it; FLUSH_SLAVE_TIMEOUT after
slaveTimeout; SLAVE_NOT_AVAILABLE at once with no slave or one too far behind; one report
answers every waiting put (group transfer). The message is stored in every case."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from orbitmq.store import MessageStore, PutMessageStatus
from orbitmq.store.ha import HAService, encode_report
from orbitmq.store.message_store_config import BrokerRole, FlushDiskType
from tests.component.store.ha_pair import HAStores, wait_caught_up
from tests.eventually import eventually
from tests.support import make_message

SYNC_MASTER = {"broker_role": BrokerRole.SYNC_MASTER, "slave_timeout": 400}


def sync_master(ha: HAStores, root: Path, **overrides: Any) -> tuple[MessageStore, HAService]:
    master, service = ha.master(root, **{**SYNC_MASTER, **overrides})
    master.group_transfer = service  # as the broker's Replication wires a SYNC_MASTER
    return master, service


@contextmanager
def silent_slave(service: HAService, offset: int = 0) -> Iterator[socket.socket]:
    """A slave that connects and reports ``offset`` once, then never again (it is alive: the
    master's housekeeping is longer than the test)."""
    with socket.create_connection(("127.0.0.1", service.port)) as raw:
        raw.sendall(encode_report(offset))
        eventually(lambda: len(service.connections) == 1, what="the silent slave connected")
        yield raw


def test_a_put_is_answered_once_the_slave_holds_it(ha: HAStores, tmp_path: Path) -> None:
    master, service = sync_master(ha, tmp_path / "m", flush_disk_type=FlushDiskType.SYNC_FLUSH)
    slave, _ = ha.slave(tmp_path / "s", service.port)
    eventually(lambda: len(service.connections) == 1, what="the slave connected")
    for i in range(20):
        result = master.put_message(make_message(body=f"m{i}".encode()))
        assert result.status is PutMessageStatus.PUT_OK, result
        assert result.append_result is not None
        end = result.append_result.wrote_offset + result.append_result.wrote_bytes
        # Answered only after the slave's report: its log already holds the message.
        assert slave.commit_log.max_offset >= end
    assert service.group_transfer.waiting == 0


def test_no_slave_is_slave_not_available_at_once_and_the_message_is_stored(
    ha: HAStores, tmp_path: Path
) -> None:
    master, _ = sync_master(ha, tmp_path / "m", slave_timeout=5000)
    started = time.monotonic()
    result = master.put_message(make_message(body=b"alone"))
    assert time.monotonic() - started < 1.0
    assert result.status is PutMessageStatus.SLAVE_NOT_AVAILABLE
    assert result.is_ok and result.append_result is not None
    stored = master.look_message_by_offset(result.append_result.wrote_offset)
    assert stored is not None and stored.body == b"alone"


def test_a_slave_too_far_behind_is_not_available(ha: HAStores, tmp_path: Path) -> None:
    master, service = sync_master(ha, tmp_path / "m", ha_slave_fallbehind_max=4096)
    for i in range(5):
        master.put_message(make_message(body=b"x" * 1000, keys=f"k{i}"))
    with silent_slave(service):
        result = master.put_message(make_message(body=b"late"))
    assert result.status is PutMessageStatus.SLAVE_NOT_AVAILABLE


def test_a_slave_that_does_not_report_is_flush_slave_timeout(ha: HAStores, tmp_path: Path) -> None:
    master, service = sync_master(ha, tmp_path / "m")
    with silent_slave(service):
        started = time.monotonic()
        result = master.put_message(make_message(body=b"unreplicated"))
        waited = time.monotonic() - started
    assert result.status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
    assert 0.35 <= waited < 2.0  # slaveTimeout 400 ms
    assert result.append_result is not None
    assert master.look_message_by_offset(result.append_result.wrote_offset) is not None


async def test_one_report_answers_every_waiting_put(ha: HAStores, tmp_path: Path) -> None:
    master, service = sync_master(ha, tmp_path / "m", slave_timeout=10_000)
    with silent_slave(service) as raw:
        puts = [
            asyncio.create_task(master.async_put_message(make_message(body=f"g{i}".encode())))
            for i in range(50)
        ]
        await asyncio.sleep(0.2)
        assert not any(put.done() for put in puts)
        assert service.group_transfer.waiting == 50
        raw.sendall(encode_report(master.commit_log.max_offset))  # one report
        results = await asyncio.wait_for(asyncio.gather(*puts), 5)
    assert {r.status for r in results} == {PutMessageStatus.PUT_OK}
    assert service.group_transfer.waiting == 0


async def test_a_timed_out_put_leaves_no_request_behind_once_answered(
    ha: HAStores, tmp_path: Path
) -> None:
    master, service = sync_master(ha, tmp_path / "m", slave_timeout=200)
    with silent_slave(service) as raw:
        result = await master.async_put_message(make_message(body=b"t"))
        assert result.status is PutMessageStatus.FLUSH_SLAVE_TIMEOUT
        raw.sendall(encode_report(master.commit_log.max_offset))
        eventually(lambda: service.group_transfer.waiting == 0, what="the request dropped")


def test_puts_wait_again_after_the_slave_reconnects(ha: HAStores, tmp_path: Path) -> None:
    master, service = sync_master(ha, tmp_path / "m")
    slave, client = ha.slave(tmp_path / "s", service.port)
    eventually(lambda: len(service.connections) == 1, what="the slave connected")
    assert master.put_message(make_message(body=b"a")).status is PutMessageStatus.PUT_OK
    client.shutdown()
    eventually(lambda: not service.connections, what="the master saw the slave go")
    assert master.put_message(make_message(body=b"b")).status is (
        PutMessageStatus.SLAVE_NOT_AVAILABLE
    )
    ha.client(slave, f"127.0.0.1:{service.port}")
    wait_caught_up(master, slave)
    assert master.put_message(make_message(body=b"c")).status is PutMessageStatus.PUT_OK
