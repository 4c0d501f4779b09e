"""Config files written so that a crash never leaves both copies broken (R16).

A save writes ``name.tmp`` and syncs it, moves the current file to ``name.bak``, then moves
the temporary file into place and syncs the directory. At every instant either ``name`` or
``name.bak`` is a complete file; a load falls back to ``.bak`` when ``name`` is missing or
does not parse; if both exist and neither parses, loading is an error.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson

from orbitmq.common.errors import ConfigError, OrbitError
from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem

log = logging.getLogger(__name__)

T = TypeVar("T")


class ConfigFile:
    """One JSON config file and its ``.bak``. Not locked: one owner saves at a time."""

    def __init__(self, path: str | os.PathLike[str], fs: FileSystem = OS_FILE_SYSTEM):
        self.path = Path(path)
        self.backup_path = self.path.with_name(self.path.name + ".bak")
        self._tmp_path = self.path.with_name(self.path.name + ".tmp")
        self._fs = fs

    def save(self, data: Any) -> None:
        """Write ``data`` as JSON, keeping the previous content as ``.bak``."""
        self.save_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))

    def save_bytes(self, content: bytes) -> None:
        """Write ``content``, keeping the previous content as ``.bak``.

        Raises OSError naming the file when the new content cannot be moved into place;
        the previous content is then still under ``path`` (or, if even putting it back
        failed, under ``.bak``, where ``load`` finds it). Other OSErrors (a full disk while
        writing the temporary file) leave ``path`` untouched and pass through.
        """
        fs = self._fs
        path, backup, tmp = str(self.path), str(self.backup_path), str(self._tmp_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = fs.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            fs.write(fd, content, 0)
            fs.sync(fd)
        finally:
            os.close(fd)
        had_previous = self.path.exists()
        try:
            if had_previous:
                fs.rename(path, backup)
            fs.rename(tmp, path)
        except OSError as exc:
            if had_previous and not self.path.exists():
                self._put_back(backup, path)
            # Still an OSError: the owners' persist loops treat it as any failed write.
            raise OSError(
                exc.errno,
                f"cannot save {path}: moving {tmp} into place failed: {exc.strerror or exc}",
            ) from exc
        fs.sync_directory(str(self.path.parent))

    def _put_back(self, backup: str, path: str) -> None:
        # The previous content went to .bak and the new one could not take its place:
        # readers of ``path`` (RocketMQ's tools among them) should still find it there.
        try:
            self._fs.rename(backup, path)
        except OSError as exc:
            log.error("%s stays in %s: putting it back failed: %s", path, backup, exc)

    def load(self) -> Any | None:
        """The saved JSON; see ``load_with``."""
        return self.load_with(orjson.loads)

    def load_with(self, parse: Callable[[bytes], T]) -> T | None:
        """``parse`` of the main file, or of ``.bak`` when the main file is missing, empty or
        does not parse; None when neither exists (a first start).

        Raises ConfigError naming both files when one exists but neither parses: starting
        with an empty table would silently lose what they held.
        """
        problems: list[str] = []
        for candidate in (self.path, self.backup_path):
            try:
                content = candidate.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                problems.append(f"{candidate}: {exc.strerror}")
                continue
            if not content.strip():  # as RocketMQ, an empty file counts as absent
                log.warning("config file %s is empty; trying its backup", candidate)
                continue
            try:
                parsed = parse(content)
            except (ValueError, OrbitError) as exc:
                log.warning("config file %s does not parse (%s); trying its backup", candidate, exc)
                problems.append(f"{candidate}: {exc}")
                continue
            if candidate == self.backup_path:
                log.warning("loaded %s from its backup", self.path)
            return parsed
        if problems:
            raise ConfigError(
                f"cannot load {self.path} nor its backup; fix or remove them: "
                + "; ".join(problems)
            )
        return None
