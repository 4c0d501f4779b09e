"""The web console from the command line (issue 18 §1): ``orbitmq start`` serves it and
names it in its ready line (consolePort -1: none), and ``orbitmq console -n`` serves it
alone over a running cluster. Real processes, real HTTP."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.eventually import eventually
from tests.support import SMALL_STORE_CONF, run_orbitmq, start_orbitmq

CONSOLE_READY = re.compile(r"OrbitMQ console ready on (\S+) \(name servers (\S+)\)$")


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        return str(response.read().decode())


def stop(process: subprocess.Popen[bytes], err: Path) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0, err.read_text()


def test_start_serves_the_console_and_console_serves_it_alone(tmp_path: Path) -> None:
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "orbitmq")
    standalone: subprocess.Popen[bytes] | None = None
    try:
        namesrv, console_url = ready.group(1), ready.group(6)
        assert console_url.startswith("http://127.0.0.1:"), ready.group(0)
        page = get(console_url)
        assert "<h1>Cluster</h1>" in page and "broker-a" in page and "MASTER" in page

        out = tmp_path / "console.out"
        with out.open("wb") as out_file, (tmp_path / "console.err").open("wb") as err_file:
            standalone = subprocess.Popen(
                [sys.executable, "-m", "orbitmq.cli", "console", "-n", namesrv, "--port", "0"],
                stdout=out_file,
                stderr=err_file,
            )

        def console_ready() -> re.Match[str] | None:
            lines = out.read_text().splitlines()
            return next(filter(None, map(CONSOLE_READY.match, lines)), None)

        url = eventually(console_ready, 10, what="the console's ready line").group(1)
        assert "DefaultCluster" in get(url)
        assert "<h1>Topics</h1>" in get(url + "topics")
        stop(standalone, tmp_path / "console.err")
        stop(process, tmp_path / "orbitmq.err")
    finally:
        for p in (standalone, process):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_console_port_minus_one_turns_the_console_off(tmp_path: Path) -> None:
    config = tmp_path / "broker.conf"
    config.write_text(SMALL_STORE_CONF + "consolePort=-1\n")
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "orbitmq", config)
    try:
        assert ready.group(6) == "off", ready.group(0)
        stop(process, tmp_path / "orbitmq.err")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_console_refuses_a_bad_port_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "orbitmq.cli", "console", "-n", "127.0.0.1:1", "--port", "70000"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.decode().strip() == "orbitmq: error: --port: 70000 is not a port (0..65535)"


def test_a_console_port_in_use_fails_the_start_in_one_line(tmp_path: Path) -> None:
    config = tmp_path / "broker.conf"
    config.write_text(SMALL_STORE_CONF)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_orbitmq(
            "start",
            *("-c", str(config), "--data-dir", str(tmp_path / "data")),
            *("--namesrv-port", "0", "--listen-port", "0", "--console-port", str(port)),
        )
    assert done.returncode == 1, done.stdout
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("orbitmq: error: ") and "address already in use" in line
    assert "ready" not in done.stdout
