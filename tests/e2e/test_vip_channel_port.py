"""The broker's VIP channel port (listenPort - 2) from the command line: a taken VIP port
stops `orbitmq start` with one line that names it, before the data directory is touched."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support import free_port_pair, run_orbitmq

HOST = "127.0.0.1"


def test_a_taken_vip_port_is_one_line_naming_it(tmp_path: Path) -> None:
    port = free_port_pair(HOST)
    data_dir = tmp_path / "data"
    with socket.socket() as squatter:
        squatter.bind((HOST, port - 2))
        squatter.listen()
        done = run_orbitmq(
            "start",
            "--data-dir",
            str(data_dir),
            "--namesrv-port",
            "0",
            "--listen-port",
            str(port),
        )
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"{HOST}:{port - 2}" in lines[0]
    assert f"VIP channel port (listenPort {port} - 2" in lines[0]
    assert not data_dir.exists() or not any(data_dir.rglob("*.json"))
