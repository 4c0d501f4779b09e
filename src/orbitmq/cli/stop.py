"""``orbitmq stop``: stop the server that holds a data directory, gracefully.

The holder is found through the store's lock (the kernel knows which process holds it), so
nothing else is needed: no pid file to go stale. SIGTERM makes it stop as Ctrl-C does; the
command returns once the store is released and the process is gone.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import click

from orbitmq.broker import load_broker_config
from orbitmq.cli.console import err, fail, say
from orbitmq.cli.log_level import log_level_option
from orbitmq.cli.servers import DEFAULT_DATA_DIR, config_options
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties
from orbitmq.store import store_holder_pid

_POLL_S = 0.05


def _store_root(config_path: str | None, data_dir: str | None) -> str:
    """The data directory as ``orbitmq start`` would choose it from the same options."""
    if data_dir is None and config_path is not None:
        keys = parse_properties(Path(config_path).read_text(encoding="utf-8"))
        if "storePathRootDir" in keys:
            return load_broker_config(config_path, environ={}).store.store_path_root_dir
    return str(Path(data_dir or DEFAULT_DATA_DIR).expanduser().resolve())


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting for its parent does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: kill(0) is all there is
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


@click.command()
@config_options
@click.option(
    "--timeout",
    type=float,
    default=60.0,
    show_default=True,
    help="Seconds to wait for the server to finish stopping.",
)
@log_level_option()
def stop(config_path: str | None, data_dir: str | None, timeout: float) -> None:
    """Stop the server running on a data directory (what `orbitmq start` started there)."""
    try:
        root = _store_root(config_path, data_dir)
    except (ConfigError, OSError) as exc:
        fail(f"cannot read the broker config {config_path}: {exc}")
    pid = store_holder_pid(root)
    if pid is None:
        fail(f"no OrbitMQ runs on {root} (nothing holds its lock)")
    if pid == os.getpid():
        fail(f"{root} is held by this process")
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        say(f"OrbitMQ stopped: process {pid} had already exited")
        return
    except PermissionError:
        fail(f"process {pid} holds {root} but belongs to another user: stop it as that user")
    deadline = time.monotonic() + timeout
    with err.status(f"stopping process {pid} (it flushes and closes {root}) ..."):
        while store_holder_pid(root) == pid or _alive(pid):
            if time.monotonic() > deadline:
                fail(
                    f"process {pid} still runs {timeout:g} s after SIGTERM; it may be "
                    f"flushing a large store: wait, or kill -9 it (the next start recovers "
                    "the store)"
                )
            time.sleep(_POLL_S)
    say(f"OrbitMQ stopped: process {pid} released {root}")
