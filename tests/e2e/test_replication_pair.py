"""A master and a slave in their own processes, started as operators do (`orbitmq start` and
`orbitmq broker -c slave.conf`): the slave finds its master's HA address through the name
server and its commit log becomes the master's, file for file."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

from orbitmq.client import Producer, SendStatus
from orbitmq.common import Message
from tests.eventually import eventually
from tests.support import SMALL_STORE_CONF, start_orbitmq


async def _produce(namesrv: str, count: int) -> None:
    async with Producer("replication-e2e", namesrv_addr=namesrv) as producer:
        for i in range(count):
            result = await producer.send(Message("PairTopic", f"m-{i:05d}".encode() * 50))
            assert result.send_status is SendStatus.SEND_OK


def _files(directory: Path) -> dict[str, bytes]:
    if not directory.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_slave_process_copies_its_masters_commit_log(tmp_path: Path) -> None:
    master_conf = tmp_path / "master.conf"
    master_conf.write_text(SMALL_STORE_CONF + "brokerName=broker-a\n")
    master, ready = start_orbitmq(tmp_path / "master", tmp_path / "master", master_conf)
    slave: subprocess.Popen[bytes] | None = None
    try:
        namesrv = ready.group(1)
        asyncio.run(_produce(namesrv, 200))
        slave_conf = tmp_path / "slave.conf"
        slave_conf.write_text(
            SMALL_STORE_CONF
            + "brokerName=broker-a\nbrokerId=1\nbrokerRole=SLAVE\n"
            + f"storePathRootDir={tmp_path / 'slave'}\n"
        )
        with (tmp_path / "slave.err").open("wb") as err:
            slave = subprocess.Popen(
                [
                    *(sys.executable, "-m", "orbitmq.cli", "broker", "-c", str(slave_conf)),
                    *("--listen-port", "0", "-n", namesrv),
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        asyncio.run(_produce(namesrv, 200))  # and what arrives while it copies
        master_log = next((tmp_path / "master").rglob("commitlog"))
        eventually(
            lambda: _files(master_log) == _files(tmp_path / "slave" / "commitlog"),
            30,
            0.2,
            what="the slave's commit log files equal to the master's",
        )
    finally:
        for process in (slave, master):
            if process is not None:
                process.send_signal(signal.SIGTERM)
                process.wait(timeout=30)
