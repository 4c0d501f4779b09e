"""Bad input on the HA connection, on real sockets: garbage, a report beyond the master's
log, a slave that never reads, silence, a frame at the wrong offset. Each side stays up,
closes what it must and says why in its log."""

from __future__ import annotations

import logging
import socket
import struct
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from orbitmq.store.ha import (
    FRAME_HEADER_SIZE,
    encode_frame_header,
    encode_report,
    ha_connection,
)
from tests.component.store.ha_pair import HAStores, wait_caught_up
from tests.component.store.test_ha_replication import _put
from tests.eventually import eventually


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "closed"
        data += chunk
    return data


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(10)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    return True


def test_garbage_and_a_negative_offset_close_only_that_connection(
    ha: HAStores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    master, service = ha.master(tmp_path / "m")
    _put(master, 20, "a")
    slave, client = ha.slave(tmp_path / "s", service.port)
    wait_caught_up(master, slave)
    with caplog.at_level(logging.INFO, logger="orbitmq.store.ha"):
        with socket.create_connection(("127.0.0.1", service.port)) as raw:
            raw.sendall(b"\xff" * 8)
            assert _closed_by_peer(raw)
        assert "reported offset -1: not an offset" in caplog.text
        assert "closed: bad report -1" in caplog.text
        # Text reads as reports of huge offsets (only the last whole one counts).
        with socket.create_connection(("127.0.0.1", service.port)) as raw:
            raw.sendall(b"GET / HTTP/1.1\r\n\r\n")
            eventually(lambda: "beyond this master's log as recovered" in caplog.text)
    _put(master, 20, "b")
    wait_caught_up(master, slave)  # the real slave's connection went on
    assert client.connections_made == 1


def test_a_report_beyond_the_masters_log_is_streamed_from_its_end(
    ha: HAStores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    master, service = ha.master(tmp_path / "m")
    _put(master, 20, "a")
    service.shutdown()
    service = ha.serve(master)  # as after a restart: it recovered 20 messages
    end = master.commit_log.max_offset
    assert service.recovered_max_offset == end
    with (
        caplog.at_level(logging.INFO, logger="orbitmq.store.ha"),
        socket.create_connection(("127.0.0.1", service.port)) as raw,
    ):
        raw.sendall(encode_report(end + 10**9))
        header = _recv_exactly(raw, FRAME_HEADER_SIZE)
        assert header == encode_frame_header(end, 0)
    service.shutdown()
    assert f"reports offset {end + 10**9}, beyond this master's log as recovered" in caplog.text
    assert service.push2_slave_max_offset == 0  # a claim beyond the log counts for nothing


def test_a_slave_that_never_reads_is_closed_and_puts_go_on(
    ha: HAStores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    master, service = ha.master(tmp_path / "m", ha_housekeeping_interval=500)
    stop = threading.Event()
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(("127.0.0.1", service.port))

    def keep_reporting() -> None:  # alive by its reports, but reads nothing
        while not stop.wait(0.1):
            try:
                raw.sendall(encode_report(0))
            except OSError:
                return

    reporter = threading.Thread(target=keep_reporting)
    with caplog.at_level(logging.INFO, logger="orbitmq.store.ha"):
        reporter.start()
        try:
            eventually(lambda: service.connections, what="the connection")
            started = time.monotonic()
            _put(master, 3000, "a", size=4000)  # 12 MB: more than the socket buffers hold
            put_s = time.monotonic() - started
            eventually(lambda: "the slave read nothing for 500 ms" in caplog.text)
            assert service.connections == ()
        finally:
            stop.set()
            reporter.join()
            raw.close()
    assert put_s < 10, put_s


def test_a_silent_peer_is_closed_after_the_housekeeping_interval(
    ha: HAStores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _, service = ha.master(tmp_path / "m", ha_housekeeping_interval=300)
    with (
        caplog.at_level(logging.INFO, logger="orbitmq.store.ha"),
        socket.create_connection(("127.0.0.1", service.port)) as raw,
    ):
        eventually(lambda: service.connections, what="the connection")
        assert _closed_by_peer(raw)
    assert "closed: no report for 300 ms" in caplog.text
    assert service.connections == ()


@contextmanager
def _fake_master() -> Iterator[tuple[socket.socket, list[socket.socket]]]:
    """A listening socket whose accepted connections the test drives by hand."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server, accepted
    finally:
        server.close()
        for sock in accepted:
            sock.close()


def test_the_slave_closes_a_silent_master_and_connects_again(
    ha: HAStores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with _fake_master() as (server, accepted), caplog.at_level(logging.INFO, "orbitmq.store.ha"):
        _, client = ha.slave(tmp_path / "s", server.getsockname()[1], ha_housekeeping_interval=300)
        first = eventually(lambda: accepted[:1])[0]
        assert _recv_exactly(first, 8) == encode_report(0)  # reported at once
        eventually(lambda: len(accepted) >= 2, what="a second connection")
        assert "nothing from the master for 300 ms" in caplog.text
        client.shutdown()


def test_the_slave_drops_a_frame_beyond_its_log(
    ha: HAStores, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    master, service = ha.master(tmp_path / "m")
    _put(master, 5, "a")
    slave, client = ha.slave(tmp_path / "s", service.port)
    wait_caught_up(master, slave)
    own = slave.commit_log.max_offset
    client.shutdown()
    # The same slave, pointed at a master that sends a frame past its end.
    with _fake_master() as (server, accepted), caplog.at_level(logging.INFO, "orbitmq.store.ha"):
        again = ha.client(slave, f"127.0.0.1:{server.getsockname()[1]}")
        try:
            first = eventually(lambda: accepted[:1])[0]
            assert _recv_exactly(first, 8) == encode_report(own)
            first.sendall(encode_frame_header(own + 100, 3) + b"abc")
            eventually(lambda: len(accepted) >= 2, what="a new connection")
        finally:
            again.shutdown()
    assert f"frame at offset {own + 100} is not this slave's max offset {own}" in caplog.text
    assert slave.commit_log.max_offset == own


def test_a_report_of_frames_received_while_the_send_still_blocks_counts(
    ha: HAStores, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The master sends several frames in one blocking send; a slave that has read and
    stored the first frames reports them before that send returns (on a real network the
    send outlasts the first frames' round trip). The report must count at once: a
    SYNC_MASTER's waiting sends depend on it, and the slave may not report again for a
    heartbeat interval. Loopback's socket buffers hold 1 MiB, so the test sends more."""
    monkeypatch.setattr(ha_connection, "_FRAMES_PER_SEND_BYTES", 16 * 1024 * 1024)
    master, service = ha.master(
        tmp_path / "m", ha_housekeeping_interval=5000, mapped_file_size_commit_log=1 << 24
    )
    _put(master, 3000, "a", size=4000)  # 12 MB in one file: more than the buffers hold
    raw = socket.socket()
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    raw.connect(("127.0.0.1", service.port))
    try:
        raw.sendall(encode_report(0))
        header = _recv_exactly(raw, FRAME_HEADER_SIZE)
        offset, size = struct.unpack(">qi", header)
        assert offset == 0 and size > 0
        _recv_exactly(raw, size)
        raw.sendall(encode_report(size))  # read no further: the master's send stays blocked
        eventually(
            lambda: service.push2_slave_max_offset == size,
            timeout_s=3,
            what="the report of the first frame counted",
        )
    finally:
        raw.close()


def test_a_slaves_report_of_the_tail_it_must_truncate_is_not_counted(
    ha: HAStores, tmp_path: Path
) -> None:
    """A slave holding a tail this master lost is streamed from where the master's log
    went on; until it truncates, its reports name its old tail, which the stream covers
    but the slave does not hold as the master's bytes. Only its reports after truncating
    count."""
    master, service = ha.master(tmp_path / "m")
    _put(master, 20, "a")
    service.shutdown()
    service = ha.serve(master)  # as after a restart: it recovered 20 messages
    start = master.commit_log.max_offset
    _put(master, 20, "b")  # written after the restart, shipped to no one yet
    lost_tail = start + 100  # the slave's own tail: beyond what this master can vouch for
    with socket.create_connection(("127.0.0.1", service.port)) as raw:
        raw.sendall(encode_report(lost_tail))
        offset, size = struct.unpack(">qi", _recv_exactly(raw, FRAME_HEADER_SIZE))
        assert offset == start and start + size > lost_tail
        _recv_exactly(raw, size)
        raw.sendall(encode_report(lost_tail))  # a heartbeat sent before it truncated
        time.sleep(0.3)
        assert service.push2_slave_max_offset == 0
        raw.sendall(encode_report(start + size))  # truncated, then stored the frame
        eventually(lambda: service.push2_slave_max_offset == start + size, timeout_s=3)
