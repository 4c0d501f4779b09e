"""A master/slave pair as operators run it: ``orbitmq namesrv``, ``orbitmq broker -c
master.conf`` and ``orbitmq broker -c slave.conf``, three OS processes on 127.0.0.1.

The master's ports are fixed when the pair is made, so a master killed with SIGKILL starts
again where its slave (which learned its HA address from the name server, or has it from
``haMasterAddress``) looks for it, and on the same store directory. Brokers log at INFO to
their ``.err`` file, which the tests read for what the master said.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.support import SMALL_STORE_CONF, free_port_pair

BROKER_NAME = "broker-ha"
NAMESRV_READY = re.compile(r"OrbitMQ name server ready on (\S+),")
BROKER_READY = re.compile(r"OrbitMQ broker ready: (\S+) ")
#: Short HA intervals: an idle master's heartbeat and a slave's report each second, a silent
#: peer dropped after 5 s (RocketMQ: 5 s and 20 s).
FAST_HA_CONF = "haSendHeartbeatInterval=1000\nhaHousekeepingInterval=5000\n"
_READY_TIMEOUT_S = 20.0


def free_port() -> int:
    """A port nothing listens on now (the system's pick; it may be taken before it is used,
    which a test would see as a failed start)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass(slots=True)
class ServerProcess:
    """One ``orbitmq`` server process and the files its output goes to."""

    name: str
    args: list[str]
    out: Path
    process: subprocess.Popen[bytes] | None = None
    address: str = ""

    def start(self, ready: re.Pattern[str]) -> None:
        """Start it and wait (bounded) for its ready line; its address is the line's first
        group."""
        seen = self.out.read_text() if self.out.exists() else ""
        with self.out.open("ab") as out, self.out.with_suffix(".err").open("ab") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "orbitmq.cli", *self.args],
                stdout=out,
                stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            match = ready.search(self.out.read_text()[len(seen) :])
            if match:
                self.address = match.group(1)
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.kill()
        err_text = self.out.with_suffix(".err").read_text()[-4000:]
        raise AssertionError(f"{self.name} did not start: {err_text}")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown hook runs, the abort file stays."""
        if self.process is not None:
            self.process.kill()
            self.process.wait(10)

    def stop(self) -> None:
        """SIGTERM, as an operator stops a server; SIGKILL if it does not stop in time."""
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def _broker_args(conf: Path) -> list[str]:
    return ["broker", "-c", str(conf), "--log-level", "info"]


class HaPair:
    """Owns a name server, a master and a slave process (group ``broker-ha``) and their
    conf files and stores under ``root``. ``role`` and ``flush`` are the master's
    brokerRole and flushDiskType; ``master_extra`` and ``slave_extra`` more broker.conf
    lines for each; ``ha_port`` the master's haListenPort (a free one if 0), e.g. for a
    relay made before the slave's conf names it. For one controlling thread."""

    def __init__(
        self,
        root: Path,
        *,
        role: str = "SYNC_MASTER",
        flush: str = "SYNC_FLUSH",
        master_extra: str = "",
        slave_extra: str = "",
        ha_port: int = 0,
    ) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.namesrv = ServerProcess(
            "name server",
            ["namesrv", "--listen-port", "0", "--bind", "127.0.0.1"],
            root / "namesrv.out",
        )
        self._role, self._flush = role, flush
        self._master_extra, self._slave_extra = master_extra, slave_extra
        self.ha_port = ha_port or free_port()
        self.master_dir, self.slave_dir = root / "master", root / "slave"
        self.master: ServerProcess | None = None
        self.slave: ServerProcess | None = None

    def start(self) -> None:
        self.namesrv.start(NAMESRV_READY)
        # Each broker also listens on listenPort - 2 (its VIP channel): both must be free.
        master_port, slave_port = free_port_pair(), free_port_pair()
        master_conf = self._conf(
            "master",
            f"brokerId=0\nbrokerRole={self._role}\nflushDiskType={self._flush}\n"
            f"listenPort={master_port}\nhaListenPort={self.ha_port}\n{self._master_extra}",
        )
        slave_conf = self._conf(
            "slave", f"brokerId=1\nbrokerRole=SLAVE\nlistenPort={slave_port}\n{self._slave_extra}"
        )
        self.master = ServerProcess("master", _broker_args(master_conf), self.root / "m.out")
        self.slave = ServerProcess("slave", _broker_args(slave_conf), self.root / "s.out")
        self.master.start(BROKER_READY)
        self.slave.start(BROKER_READY)

    def _conf(self, name: str, lines: str) -> Path:
        path = self.root / f"{name}.conf"
        path.write_text(
            SMALL_STORE_CONF
            + FAST_HA_CONF
            + f"brokerClusterName=HaCluster\nbrokerName={BROKER_NAME}\n"
            + "bindAddress=127.0.0.1\nbrokerIP1=127.0.0.1\n"
            + f"namesrvAddr={self.namesrv.address}\n"
            + f"storePathRootDir={self.root / name}\n"
            + lines
        )
        return path

    @property
    def namesrv_addr(self) -> str:
        return self.namesrv.address

    @property
    def master_addr(self) -> str:
        assert self.master is not None, "not started"
        return self.master.address

    @property
    def slave_addr(self) -> str:
        assert self.slave is not None, "not started"
        return self.slave.address

    def master_log(self) -> str:
        """What the master (all its runs) logged so far."""
        return (self.root / "m.err").read_text()

    def kill_master(self) -> None:
        assert self.master is not None, "not started"
        self.master.kill()

    def restart_master(self) -> None:
        """The same conf file, ports and store directory."""
        assert self.master is not None, "not started"
        self.master.start(BROKER_READY)

    def stop(self) -> None:
        for server in (self.slave, self.master, self.namesrv):
            if server is not None:
                server.stop()

    def __enter__(self) -> HaPair:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
