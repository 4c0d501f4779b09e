"""The command line's basics, as subprocesses: --version, --log-level on either side of the
subcommand, `orbitmq stop`, where `orbitmq start` listens, the open-files limit, and a busy
port refused before the data directory is touched."""

from __future__ import annotations

import os
import resource
import socket
from importlib.metadata import version
from pathlib import Path

import pytest

from orbitmq import _compiled
from orbitmq.common.socket_address import local_address
from tests.support import run_orbitmq, start_orbitmq


def _port(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def _connects(host: str, port: int) -> bool:
    try:
        socket.create_connection((host, port), timeout=2).close()
    except OSError:
        return False
    return True


def test_version() -> None:
    done = run_orbitmq("--version")
    assert done.returncode == 0
    build = _compiled.state().description  # the same environment: the same decision
    assert done.stdout.strip() == f"orbitmq, version {version('orbitmq')} ({build})"


def test_log_level_is_accepted_after_the_subcommand_too() -> None:
    for args in (["--log-level", "DEBUG", "stop", "--help"], ["stop", "--log-level", "INFO", "-h"]):
        done = run_orbitmq(*args)
        assert done.returncode == 0, done.stderr
        assert "Stop the server" in done.stdout
    done = run_orbitmq("stop", "--log-level", "LOUD")
    assert done.returncode == 2
    assert "LOUD" in done.stderr


def test_start_listens_on_this_machine_only_and_stop_stops_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    process, ready = start_orbitmq(data_dir, tmp_path / "orbitmq", open_files_soft_limit=256)
    try:
        namesrv, broker = ready.group(1), ready.group(2)
        out = (tmp_path / "orbitmq.out").read_text()
        assert "listening on 127.0.0.1, data in" in out
        assert namesrv.startswith("127.0.0.1:") and broker.startswith("127.0.0.1:")
        assert _connects("127.0.0.1", _port(broker))
        outside = local_address()
        if outside != "127.0.0.1":  # a machine with a network: not reachable from it
            assert not _connects(outside, _port(broker))
            assert not _connects(outside, _port(namesrv))
        # Started with a soft open-files limit of 256, it raised it to the hard limit.
        limits = Path(f"/proc/{process.pid}/limits").read_text()
        line = next(x for x in limits.splitlines() if x.startswith("Max open files"))
        if hard != resource.RLIM_INFINITY:
            assert int(line.split()[3]) == hard
            assert f"open files limit raised from 256 to {hard}" in out
        assert (data_dir / "abort").exists()

        done = run_orbitmq("stop", "--data-dir", str(data_dir))
        assert done.returncode == 0, done.stderr
        assert f"process {process.pid} released {data_dir.resolve()}" in done.stdout
        assert process.wait(timeout=10) == 0
        # A graceful stop: the store was shut down as on SIGTERM.
        assert not (data_dir / "abort").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    done = run_orbitmq("stop", "--data-dir", str(data_dir))
    assert done.returncode == 1
    assert f"no OrbitMQ runs on {data_dir.resolve()}" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_bind_every_interface_when_asked_and_say_so(tmp_path: Path) -> None:
    outside = local_address()
    if outside == "127.0.0.1":
        pytest.skip("this machine has no address but the loopback one")
    conf = tmp_path / "bind.conf"
    conf.write_text("bindAddress=0.0.0.0\nmappedFileSizeCommitLog=16777216\n")
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "orbitmq", conf)
    try:
        assert _connects(outside, _port(ready.group(2)))
        # The broker gives clients an address they can reach: this host's, not loopback.
        assert ready.group(2).startswith(f"{outside}:")
        out = (tmp_path / "orbitmq.out").read_text()
        assert "listening on every interface (0.0.0.0)" in out
        err = (tmp_path / "orbitmq.err").read_text()
        assert "without authentication" in err
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_busy_port_fails_before_the_data_directory_is_touched(tmp_path: Path) -> None:
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "orbitmq")
    try:
        other = tmp_path / "other"
        done = run_orbitmq(
            "start",
            "--data-dir",
            str(other),
            "--namesrv-port",
            "0",
            "--listen-port",
            str(_port(ready.group(2))),
        )
        assert done.returncode == 1
        assert "address already in use" in done.stderr.lower()
        assert len(done.stderr.strip().splitlines()) == 1
        assert not other.exists() or not any(other.iterdir())
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_stop_says_when_the_config_cannot_be_read(tmp_path: Path) -> None:
    done = run_orbitmq("stop", "-c", str(tmp_path / "missing.conf"))
    assert done.returncode == 1
    assert "missing.conf" in done.stderr
    assert os.linesep not in done.stderr.strip()
