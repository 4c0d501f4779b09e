"""One process per store: the ``lock`` file in the store root, RocketMQ's lock on its first
byte. A second store (in this process or another) is refused before it reads or writes
anything; the lock dies with its holder, kill -9 included."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from orbitmq.store import MessageStore, StoreLock, StoreLockedError, store_holder_pid
from tests.conftest import StoreFactory
from tests.support import REPO_ROOT, make_message, small_config

#: Holds the lock of argv[1] until killed, as another broker would.
_HOLDER = """
import sys, time
from orbitmq.store import StoreLock
StoreLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""


def _snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_second_store_on_a_loaded_root_is_refused_and_changes_nothing(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    root = tmp_path / "store"
    first = store_factory(root)
    assert first.put_message(make_message(body=b"acked")).is_ok
    assert first.wait_for_dispatch()
    first.flush_consume_queue_service.do_flush(0)
    first.commit_log.mapped_file_queue.flush(0)
    before = _snapshot(root)

    second = MessageStore(small_config(root))
    with pytest.raises(StoreLockedError) as refused:
        second.load()
    assert str(root) in str(refused.value)
    assert f"process {os.getpid()}" in str(refused.value)
    assert refused.value.holder_pid == os.getpid()
    second.shutdown()  # a refused store writes nothing on shutdown either
    assert _snapshot(root) == before
    assert store_holder_pid(str(root)) == os.getpid()
    # The first store is untouched and still works.
    assert first.put_message(make_message(body=b"after")).is_ok


def test_a_lock_held_by_another_process_names_its_pid_and_dies_with_it(tmp_path: Path) -> None:
    root = tmp_path / "store"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(root)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        assert store_holder_pid(str(root)) == holder.pid
        store = MessageStore(small_config(root))
        with pytest.raises(StoreLockedError) as refused:
            store.load()
        assert refused.value.holder_pid == holder.pid
        assert f"process {holder.pid}" in str(refused.value)
        # Nothing but the lock file itself: no checkpoint, no commit log, no config.
        assert sorted(p.name for p in root.iterdir()) == ["lock"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # A stale lock file: the lock went with the process.
    assert store_holder_pid(str(root)) is None
    store = MessageStore(small_config(root))
    store.load()
    try:
        assert store_holder_pid(str(root)) == os.getpid()
        assert (root / "lock").read_text().strip() == str(os.getpid())
    finally:
        store.shutdown()
    assert store_holder_pid(str(root)) is None


def test_shutdown_gives_the_lock_back(store_factory: StoreFactory, tmp_path: Path) -> None:
    root = tmp_path / "store"
    store_factory(root).shutdown()
    assert store_holder_pid(str(root)) is None
    again = store_factory(root)
    assert again.recovery_report is not None


def test_a_lock_object_takes_and_gives_back_once(tmp_path: Path) -> None:
    lock = StoreLock(str(tmp_path))
    lock.acquire()
    lock.acquire()  # held already: nothing more
    assert lock.held
    with pytest.raises(StoreLockedError):
        StoreLock(str(tmp_path)).acquire()
    lock.release()
    lock.release()
    assert not lock.held
    other = StoreLock(str(tmp_path))
    other.acquire()
    other.release()
