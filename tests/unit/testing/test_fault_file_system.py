"""FaultInjectingFileSystem's power loss and failing renames, on plain files."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from orbitmq.testing import FaultInjectingFileSystem


def _write(fs: FaultInjectingFileSystem, path: Path, data: bytes, offset: int = 0) -> int:
    fd = fs.open(str(path), os.O_RDWR | os.O_CREAT)
    fs.write(fd, data, offset)
    return fd


def test_drop_unsynced_puts_files_back_to_their_last_sync(tmp_path: Path) -> None:
    fs = FaultInjectingFileSystem(track_unsynced=True)
    synced, never = tmp_path / "synced", tmp_path / "never"
    fd = _write(fs, synced, b"durable")
    fs.sync(fd)
    fs.write(fd, b"-and-lost", 7)
    mapping = fs.map(fd, 7)
    mapping[0:3] = b"DUR"  # through a mapping: lost as well
    mapping.close()
    os.close(fd)
    os.close(_write(fs, never, b"never synced"))

    fs.crash()
    fd = fs.open(str(synced), os.O_RDWR)
    fs.sync(fd)  # the power is off: this makes nothing durable
    os.close(fd)
    changed = fs.drop_unsynced()

    assert sorted(changed) == sorted(os.path.realpath(p) for p in (synced, never))
    assert synced.read_bytes() == b"durable" + bytes(9)  # the size stays, the data goes
    assert never.read_bytes() == bytes(12)


def test_a_file_there_before_counts_as_durable_and_renames_carry_it(tmp_path: Path) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    old.write_bytes(b"from before")
    fs = FaultInjectingFileSystem(track_unsynced=True)
    os.close(fs.open(str(old), os.O_RDONLY))
    fs.rename(str(old), str(new))
    assert fs.drop_unsynced() == []
    assert new.read_bytes() == b"from before"


def test_drop_unsynced_needs_tracking() -> None:
    with pytest.raises(RuntimeError, match="track_unsynced"):
        FaultInjectingFileSystem().drop_unsynced()


def test_renames_fail_for_one_source_or_all(tmp_path: Path) -> None:
    fs = FaultInjectingFileSystem()
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_bytes(b"a")
    b.write_bytes(b"b")
    fs.rename_error, fs.rename_error_path = errno.EIO, str(a)
    with pytest.raises(OSError, match="Input/output error") as raised:
        fs.rename(str(a), str(tmp_path / "a2"))
    assert raised.value.errno == errno.EIO
    fs.rename(str(b), str(tmp_path / "b2"))  # another source: not this fault's
    fs.rename_error_path = None
    with pytest.raises(OSError):
        fs.rename(str(tmp_path / "b2"), str(b))
    assert a.exists() and (tmp_path / "b2").exists()
    assert fs.renames == 1
