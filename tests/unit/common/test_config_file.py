"""ConfigFile: JSON saved with a .bak, loaded with fallback, and crash-safe at every step."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from orbitmq.common import ConfigFile
from orbitmq.common import file_system as file_system_module
from orbitmq.common.errors import ConfigError
from orbitmq.common.file_system import OsFileSystem
from orbitmq.testing import FaultInjectingFileSystem


def read_json(path: Path) -> Any:
    return json.loads(path.read_bytes())


def test_save_then_load(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path / "config" / "topics.json")
    data = {"topicConfigTable": {"TopicTest": {"readQueueNums": 4}}, "dataVersion": [1, 2]}
    config.save(data)
    assert config.load() == data
    assert read_json(tmp_path / "config" / "topics.json") == data  # plain JSON on disk
    assert ConfigFile(tmp_path / "config" / "topics.json").load() == data


def test_non_string_keys_are_written_as_strings(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path / "offsets.json")
    config.save({"offsetTable": {"TopicTest@group": {0: 12, 1: 34}}})
    assert config.load() == {"offsetTable": {"TopicTest@group": {"0": 12, "1": 34}}}


def test_load_of_nothing_is_none(tmp_path: Path) -> None:
    assert ConfigFile(tmp_path / "absent.json").load() is None


def test_bak_keeps_the_previous_content(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path / "c.json")
    config.save({"v": 1})
    config.save({"v": 2})
    assert read_json(tmp_path / "c.json") == {"v": 2}
    assert read_json(tmp_path / "c.json.bak") == {"v": 1}
    config.save({"v": 3})
    assert read_json(tmp_path / "c.json.bak") == {"v": 2}
    assert config.backup_path == tmp_path / "c.json.bak"
    assert not (tmp_path / "c.json.tmp").exists()


def test_load_falls_back_to_bak_when_the_file_is_missing(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path / "c.json")
    config.save({"v": 1})
    config.save({"v": 2})
    (tmp_path / "c.json").unlink()
    assert config.load() == {"v": 1}


@pytest.mark.parametrize("keep", [0, 1, 5, -1], ids=["empty", "one-byte", "five-bytes", "last"])
def test_load_falls_back_to_bak_when_the_file_is_truncated(tmp_path: Path, keep: int) -> None:
    config = ConfigFile(tmp_path / "c.json")
    config.save({"v": 1, "name": "old"})
    config.save({"v": 2, "name": "new"})
    content = (tmp_path / "c.json").read_bytes()
    (tmp_path / "c.json").write_bytes(content[:keep])
    assert config.load() == {"v": 1, "name": "old"}


def test_load_falls_back_to_bak_when_the_file_is_garbage(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path / "c.json")
    config.save({"v": 1})
    config.save({"v": 2})
    (tmp_path / "c.json").write_bytes(b"\xff\xfe\x00 not json")
    assert config.load() == {"v": 1}


def test_both_broken_is_an_error_naming_the_file(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path / "c.json")
    (tmp_path / "c.json").write_bytes(b"{")
    (tmp_path / "c.json.bak").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"cannot load .*c\.json nor its backup"):
        config.load()


def test_a_stale_longer_tmp_file_does_not_leak_into_the_next_save(tmp_path: Path) -> None:
    config = ConfigFile(tmp_path / "c.json")
    (tmp_path / "c.json.tmp").write_bytes(b'{"left": "over from a crash", "x": ' + b"1" * 500)
    assert config.load() is None  # a leftover .tmp is never read
    config.save({"v": 1})
    assert read_json(tmp_path / "c.json") == {"v": 1}


# -- crashes during a save ---------------------------------------------------------------


class SimulatedCrash(BaseException):
    """The process dies here: nothing after this point of ``save`` runs."""


STEPS = ["write", "fsync-file", "replace-1", "replace-2", "fsync-dir"]


class CrashingFileSystem(OsFileSystem):
    """The file system as ConfigFile sees it, dying at one step of a save."""

    def __init__(self, crash_at: str):
        self.crash_at = crash_at
        self.replaces = 0

    def write(self, fd: int, data: bytes | bytearray | memoryview, offset: int) -> None:
        if self.crash_at == "write":
            super().write(fd, bytes(data[: len(data) // 2]), offset)  # half of it reached the file
            raise SimulatedCrash
        super().write(fd, data, offset)

    def sync(self, fd: int) -> None:
        if self.crash_at == "fsync-file":
            raise SimulatedCrash
        super().sync(fd)

    def sync_directory(self, path: str) -> None:
        if self.crash_at == "fsync-dir":
            raise SimulatedCrash
        super().sync_directory(path)

    def rename(self, source: str, target: str) -> None:
        self.replaces += 1
        if self.crash_at == f"replace-{self.replaces}":
            raise SimulatedCrash
        super().rename(source, target)


def loads(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (FileNotFoundError, ValueError):
        return "<broken>"


def save_crashing(config: ConfigFile, data: Any, step: str) -> None:
    with contextlib.suppress(SimulatedCrash):
        ConfigFile(config.path, CrashingFileSystem(step)).save(data)


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("history", [0, 1, 2], ids=["first-save", "second-save", "third-save"])
def test_a_crash_at_any_step_leaves_old_or_new(tmp_path: Path, step: str, history: int) -> None:
    config = ConfigFile(tmp_path / "c.json")
    for v in range(history):
        config.save({"v": v, "pad": "x" * v})
    old = {"v": history - 1, "pad": "x" * (history - 1)} if history else None
    new = {"v": 99, "pad": "new"}

    save_crashing(config, new, step)

    on_disk = [loads(tmp_path / "c.json"), loads(tmp_path / "c.json.bak")]
    if history:
        assert any(content in (old, new) for content in on_disk), on_disk
    assert config.load() in (old, new)
    # after the restart the next save works and the one after keeps it as .bak
    config.save({"v": 100})
    assert config.load() == {"v": 100}
    config.save({"v": 101})
    assert config.load() == {"v": 101}
    assert read_json(tmp_path / "c.json.bak") == {"v": 100}


@pytest.mark.parametrize("first", STEPS)
@pytest.mark.parametrize("second", STEPS)
def test_two_crashed_saves_in_a_row_still_leave_a_good_copy(
    tmp_path: Path, first: str, second: str
) -> None:
    config = ConfigFile(tmp_path / "c.json")
    config.save({"v": 0})
    config.save({"v": 1})
    save_crashing(config, {"v": 2}, first)
    after_first = config.load()
    assert after_first in ({"v": 1}, {"v": 2})
    save_crashing(config, {"v": 3}, second)
    assert config.load() in (after_first, {"v": 2}, {"v": 3})
    assert config.load() is not None


class ShortWritingOs:
    """``os.pwrite`` may write fewer bytes than asked (POSIX allows it; a full disk does it)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    @staticmethod
    def pwrite(fd: int, data: bytes, offset: int) -> int:
        return os.pwrite(fd, bytes(data[:7]), offset)


def test_short_writes_do_not_store_a_truncated_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ConfigFile(tmp_path / "c.json")
    config.save({"v": 1})
    monkeypatch.setattr(file_system_module, "os", ShortWritingOs())
    config.save({"v": 2, "name": "a value longer than one short write"})
    monkeypatch.undo()
    assert read_json(tmp_path / "c.json") == {"v": 2, "name": "a value longer than one short write"}


def test_short_writes_never_leave_both_copies_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ConfigFile(tmp_path / "c.json")
    saved: list[dict[str, object]] = [{"v": 1}]
    config.save(saved[0])
    monkeypatch.setattr(file_system_module, "os", ShortWritingOs())
    for v in (2, 3):
        data: dict[str, object] = {"v": v, "name": "a value longer than one short write"}
        saved.append(data)
        # Refusing to save (an OSError) would be fine too; storing a torn copy is not.
        with contextlib.suppress(OSError):
            config.save(data)
    monkeypatch.undo()
    assert config.load() in saved


# -- a rename that fails ------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["all", "tmp"], ids=["every-rename", "moving-tmp-in"])
def test_a_failed_rename_keeps_the_old_file_and_says_so(tmp_path: Path, failing: str) -> None:
    fs = FaultInjectingFileSystem()
    config = ConfigFile(tmp_path / "topics.json", fs)
    config.save({"v": 1})
    config.save({"v": 2})
    fs.rename_error = errno.EIO
    fs.rename_error_path = None if failing == "all" else str(tmp_path / "topics.json.tmp")

    with pytest.raises(OSError, match=r"cannot save .*topics\.json: moving .*topics\.json\.tmp"):
        config.save({"v": 3})

    assert read_json(tmp_path / "topics.json") == {"v": 2}
    assert config.load() == {"v": 2}
    fs.rename_error = None
    config.save({"v": 4})
    assert config.load() == {"v": 4}
    assert read_json(tmp_path / "topics.json.bak") == {"v": 2}
