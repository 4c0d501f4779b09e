"""HA log shipping between two stores in one process, over a real socket: the slave's commit
log is the master's byte for byte, its consume queues and index follow, it resumes after a
restart and cuts a tail its master lost."""

from __future__ import annotations

import logging
import shutil
import socket
from pathlib import Path

import pytest

from orbitmq.common.message_decoder import decode_message
from orbitmq.store import GetMessageStatus, MessageStore
from orbitmq.store.ha import FrameDecoder, HAClient, encode_report
from orbitmq.store.ha.ha_codec import Frame
from tests.component.store.ha_pair import HAStores, commit_log_bytes, wait_caught_up
from tests.eventually import eventually
from tests.support import make_message


def _put(store: MessageStore, count: int, prefix: str, size: int = 2000) -> list[bytes]:
    bodies = []
    for i in range(count):
        body = f"{prefix}-{i}-".encode().ljust(size, b"x")
        result = store.put_message(make_message(body=body, queue_id=i % 4, keys=f"{prefix}-{i}"))
        assert result.is_ok, result
        bodies.append(body)
    return bodies


def _bodies(store: MessageStore, queue_id: int) -> list[bytes]:
    """Every body of one queue, read as a consumer would."""
    bodies: list[bytes] = []
    offset = 0
    while True:
        result = store.get_message("g", "TopicTest", queue_id, offset, 32)
        if result.status is not GetMessageStatus.FOUND:
            return bodies
        bodies += [decode_message(buffer).body for buffer in result.message_buffers]
        offset = result.next_begin_offset


def test_the_slave_log_is_the_masters_byte_for_byte(ha: HAStores, tmp_path: Path) -> None:
    master, service = ha.master(tmp_path / "m")
    # Past two files of 256 KiB: files roll, end-of-file blank records travel too.
    _put(master, 300, "a")
    slave, client = ha.slave(tmp_path / "s", service.port)
    wait_caught_up(master, slave)
    _put(master, 100, "b")  # and what arrives while connected
    wait_caught_up(master, slave)
    end = master.commit_log.max_offset
    assert end > 2 * master.config.mapped_file_size_commit_log
    assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)
    for queue_id in range(4):
        assert _bodies(slave, queue_id) == _bodies(master, queue_id)
        assert len(_bodies(slave, queue_id)) == 100
    found = slave.query_message("TopicTest", "b-7", 10, 0, 2**62)
    assert [decode_message(b).body[:4] for b in found.message_buffers] == [b"b-7-"]
    eventually(lambda: service.push2_slave_max_offset == end, what="the slave's ack")
    assert service.is_slave_ok(end)
    client.shutdown()


def test_a_restarted_slave_resumes_from_its_own_max_offset(ha: HAStores, tmp_path: Path) -> None:
    master, service = ha.master(tmp_path / "m")
    _put(master, 50, "a")
    slave, client = ha.slave(tmp_path / "s", service.port)
    wait_caught_up(master, slave)
    resumed_from = slave.commit_log.max_offset
    client.shutdown()
    slave.shutdown()
    _put(master, 50, "b")
    slave, client = ha.slave(tmp_path / "s", service.port)
    wait_caught_up(master, slave)
    requests = [c.slave_request_offset for c in service.connections]
    assert requests == [resumed_from]
    end = master.commit_log.max_offset
    assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)
    assert sum(len(_bodies(slave, q)) for q in range(4)) == 100
    client.shutdown()


def test_a_slave_ahead_of_its_master_truncates_to_it(
    ha: HAStores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    master, service = ha.master(tmp_path / "m")
    _put(master, 10, "a")
    service.shutdown()
    master.shutdown()
    shutil.copytree(tmp_path / "m", tmp_path / "m-lost-tail")
    master, service = ha.master(tmp_path / "m")
    _put(master, 5, "unsynced")
    slave, client = ha.slave(tmp_path / "s", service.port)
    wait_caught_up(master, slave)
    service.shutdown()
    master.shutdown()
    # The master comes back without its last 5 messages, and stores 3 others there.
    master, service = ha.master(tmp_path / "m-lost-tail")
    recovered = master.commit_log.max_offset
    _put(master, 3, "new")
    assert master.commit_log.max_offset < slave.commit_log.max_offset
    with caplog.at_level(logging.INFO, logger="orbitmq.store.ha"):
        client.update_master_address(f"127.0.0.1:{service.port}")
        wait_caught_up(master, slave)
    end = master.commit_log.max_offset
    assert commit_log_bytes(slave, end) == commit_log_bytes(master, end)
    bodies = [b[:6] for q in range(4) for b in _bodies(slave, q)]
    assert sorted(bodies).count(b"new-0-") == 1
    assert not any(b.startswith(b"unsync") for b in bodies)
    assert sum(len(_bodies(slave, q)) for q in range(4)) == 13
    assert f"ahead of its master's ({recovered}): truncated to {recovered}" in caplog.text
    assert "holds a tail this master lost" in caplog.text
    client.shutdown()


def test_a_client_learns_its_master_address_late(ha: HAStores, tmp_path: Path) -> None:
    master, service = ha.master(tmp_path / "m")
    _put(master, 5, "a")
    slave, _ = ha.slave(tmp_path / "s", service.port)
    lonely = HAClient(slave, reconnect_interval_s=0.05)
    assert lonely.master_address == ""
    lonely.update_master_address(f"127.0.0.1:{service.port}")
    assert lonely.master_address == f"127.0.0.1:{service.port}"


def test_frames_hold_a_batch_at_most_never_cross_a_file_and_idle_means_heartbeats(
    ha: HAStores, tmp_path: Path
) -> None:
    master, service = ha.master(tmp_path / "m", ha_transfer_batch_size=10_000)
    _put(master, 300, "a")  # 3 files of 256 KiB
    end = master.commit_log.max_offset
    file_size = master.config.mapped_file_size_commit_log
    decoder = FrameDecoder()
    frames: list[Frame] = []
    with socket.create_connection(("127.0.0.1", service.port)) as raw:
        raw.sendall(encode_report(0))
        raw.settimeout(10)
        # The stream to the end, then two heartbeats (haSendHeartbeatInterval 200 ms).
        while sum(1 for f in frames if not f.body) < 2:
            frames += decoder.feed(raw.recv(1 << 20))
    bodies = [f for f in frames if f.body]
    assert bodies[0].offset == 0
    assert all(len(f.body) <= 10_000 for f in bodies)
    assert all(f.offset // file_size == (f.offset + len(f.body) - 1) // file_size for f in bodies)
    assert [f.offset for f in bodies[1:]] == [f.offset + len(f.body) for f in bodies[:-1]]
    assert bodies[-1].offset + len(bodies[-1].body) == end
    assert [f.offset for f in frames if not f.body][-2:] == [end, end]
    eventually(lambda: not service.is_slave_ok(end), what="no slave once it is gone")
