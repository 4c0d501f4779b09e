"""Shared builders for tests: small store configs, messages, ``orbitmq start`` subprocesses,
and a waiter for log records."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import re
import resource
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from orbitmq.common import message_const as mc
from orbitmq.common.message import MessageExtBrokerInner
from orbitmq.common.message_id import UniqueIdGenerator
from orbitmq.store import MessageStoreConfig

REPO_ROOT = Path(__file__).resolve().parents[1]


def find_shared_dir() -> Path:
    """The project's ``shared/`` (specification, recordings): ``$ORBITMQ_SHARED_DIR``, else
    beside this checkout, else beside the repository it was cloned from (a clone made
    elsewhere, e.g. ``git clone . /tmp/fresh``, finds it through its origin)."""
    configured = os.environ.get("ORBITMQ_SHARED_DIR")
    if configured:
        return Path(configured)
    beside = REPO_ROOT.parent / "shared"
    if beside.is_dir():
        return beside
    origin = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "config", "--get", "remote.origin.url"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if origin and Path(origin).is_dir():
        return Path(origin).resolve().parent / "shared"
    return beside


#: Frames recorded between a real RocketMQ 4.9.8 and real clients.
COMPAT_DIR = find_shared_dir() / "compat"


def compat_recordings() -> list[Path]:
    """The three recordings; missing ones fail the run rather than skip what they test."""
    paths = sorted(COMPAT_DIR.glob("*.frames.jsonl"))
    assert len(paths) == 3, f"expected the three compat recordings in {COMPAT_DIR}"
    return paths


_UNIQ = UniqueIdGenerator(ip=bytes([127, 0, 0, 1]), pid=4242)
_BORN = itertools.count(1_700_000_000_000)


def small_config(root: Path | str, **overrides: Any) -> MessageStoreConfig:
    """A store config with small files and fast intervals, so tests roll files quickly."""
    values: dict[str, Any] = {
        "store_path_root_dir": str(root),
        "mapped_file_size_commit_log": 256 * 1024,
        "mapped_file_size_consume_queue": 20 * 1000,
        "max_hash_slot_num": 1000,
        "max_index_num": 4000,
        "flush_interval_commit_log": 50,
        "flush_interval_consume_queue": 50,
        "reput_idle_interval": 50,
        "clean_resource_interval": 3_600_000,
        "delete_commit_log_files_interval": 0,
        "mapped_file_size_timer_log": 52 * 1000,
    }
    values.update(overrides)
    return MessageStoreConfig(**values)


def make_message(
    topic: str = "TopicTest",
    body: bytes = b"hello orbitmq",
    *,
    queue_id: int = 0,
    tags: str | None = None,
    keys: str | None = None,
    uniq_key: bool = True,
    properties: dict[str, str] | None = None,
) -> MessageExtBrokerInner:
    """A message as the broker hands it to the store."""
    props = dict(properties or {})
    if tags is not None:
        props[mc.PROPERTY_TAGS] = tags
    if keys is not None:
        props[mc.PROPERTY_KEYS] = keys
    if uniq_key:
        props[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = _UNIQ.create()
    return MessageExtBrokerInner(
        topic=topic,
        body=body,
        queue_id=queue_id,
        properties=props,
        born_timestamp=next(_BORN),
        born_host=("10.1.2.3", 52000),
    )


READY = re.compile(
    r"OrbitMQ ready: name server (\S+), broker (\S+) \((\S+)/(\S+)\), "
    r"listening on (?:.+), data in (.+?), console (\S+|off.*?), gRPC (\S+|off.*)$"
)


#: broker.conf lines that keep a test broker's preallocated files small: the defaults (a 1 GiB
#: commit log file and a 420 MB index file) cost 1.4 GB of disk per broker started.
SMALL_STORE_CONF = "mappedFileSizeCommitLog=16777216\nmaxHashSlotNum=50000\nmaxIndexNum=200000\n"


def run_orbitmq(*args: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
    """``orbitmq ARGS`` in a subprocess, to its end (bounded); its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "orbitmq.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def start_orbitmq(
    data_dir: Path,
    out: Path,
    config: Path | None = None,
    *,
    small_files: bool = True,
    open_files_soft_limit: int | None = None,
) -> tuple[subprocess.Popen[bytes], re.Match[str]]:
    """Start ``orbitmq start [-c config]`` on free ports; wait (bounded) for its ready line.
    Without ``config`` the broker gets ``SMALL_STORE_CONF``, or with ``small_files=False`` no
    broker.conf at all (the embedded defaults ``make run`` uses). ``open_files_soft_limit``
    starts it with that soft RLIMIT_NOFILE."""

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]

    def limit_open_files() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (open_files_soft_limit or hard, hard))

    if config is None and small_files:
        config = out.with_suffix(".conf")
        config.write_text(SMALL_STORE_CONF)
    stdout, stderr = out.with_suffix(".out"), out.with_suffix(".err")
    with stdout.open("wb") as out_file, stderr.open("wb") as err_file:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "orbitmq.cli",
                "start",
                *(["-c", str(config)] if config is not None else []),
                "--data-dir",
                str(data_dir),
                "--namesrv-port",
                "0",
                "--listen-port",
                "0",
            ],
            stdout=out_file,
            stderr=err_file,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            # Only setrlimit runs between fork and exec: no lock a thread could hold.
            preexec_fn=limit_open_files if open_files_soft_limit else None,  # noqa: PLW1509
        )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for line in stdout.read_text().splitlines():
            match = READY.match(line.strip())
            if match:
                return process, match
        if process.poll() is not None:
            break
        time.sleep(0.02)
    process.kill()
    process.wait()
    raise AssertionError(f"no ready line: {stdout.read_text()!r} {stderr.read_text()!r}")


class LogRecordWaiter(logging.Handler):
    """Collects the records of one logger (and its children) and lets a test await the first
    one matching a predicate: for events that only show in the log. Use as a context
    manager; it sets the logger's level to DEBUG while attached."""

    def __init__(self, logger: str) -> None:
        super().__init__(logging.DEBUG)
        self._logger = logging.getLogger(logger)
        self._saved_level = self._logger.level
        self.records: list[logging.LogRecord] = []
        self._waiters: list[tuple[Callable[[logging.LogRecord], bool], asyncio.Event]] = []

    def __enter__(self) -> LogRecordWaiter:
        self._logger.addHandler(self)
        self._logger.setLevel(logging.DEBUG)
        return self

    def __exit__(self, *exc: object) -> None:
        self._logger.removeHandler(self)
        self._logger.setLevel(self._saved_level)

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        for predicate, event in self._waiters:
            if predicate(record):
                event.set()

    async def wait_for(
        self, predicate: Callable[[logging.LogRecord], bool], timeout_s: float = 10
    ) -> None:
        event = asyncio.Event()
        if any(predicate(r) for r in self.records):
            return
        self._waiters.append((predicate, event))
        async with asyncio.timeout(timeout_s):
            await event.wait()

    def at_least(self, level: int) -> list[str]:
        return [r.getMessage() for r in self.records if r.levelno >= level]


def free_port_pair(host: str = "127.0.0.1") -> int:
    """A port P with P and P - 2 both free on ``host`` just now: a broker's listenPort
    whose VIP channel port (listenPort - 2) is free too."""
    for _ in range(50):
        with socket.socket() as main:
            main.bind((host, 0))
            port = int(main.getsockname()[1])
            if port < 3:
                continue
            with socket.socket() as vip:
                try:
                    vip.bind((host, port - 2))
                except OSError:
                    continue
                return port
    raise AssertionError("no free port pair found")
