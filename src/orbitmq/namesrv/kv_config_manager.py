"""``KVConfigManager``: the name server's namespaced key-value configuration (RocketMQ's
``KVConfigManager``, persisted in kvConfig.json)."""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

import orjson

from orbitmq.common.file_system import OS_FILE_SYSTEM, FileSystem
from orbitmq.protocol import KVTable

log = logging.getLogger(__name__)


class KVConfigManager:
    """Owns namespace -> key -> value, and the file that keeps it (``{"configTable": ...}``,
    RocketMQ's layout). ``path`` None keeps the table in memory only.

    Each change is written at once (to a temporary file, then renamed). One lock guards the
    table: safe from several tasks and threads.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, fs: FileSystem = OS_FILE_SYSTEM
    ) -> None:
        self._path = None if path is None else Path(path)
        self._fs = fs
        self._lock = threading.Lock()
        self._table: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        """Read the file if it exists; a file that does not parse is logged and ignored, as
        RocketMQ ignores it."""
        if self._path is None or not self._path.exists():
            return
        try:
            raw = orjson.loads(self._path.read_bytes())
            table = raw.get("configTable", {}) if isinstance(raw, dict) else {}
            loaded = {
                str(ns): {str(k): str(v) for k, v in entries.items()}
                for ns, entries in table.items()
                if isinstance(entries, dict)
            }
        except (OSError, orjson.JSONDecodeError, AttributeError) as exc:
            log.error("load KV config table from %s failed: %s", self._path, exc)
            return
        with self._lock:
            self._table = loaded
        log.info("load KV config table OK, %d namespaces", len(loaded))

    def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        with self._lock:
            self._table.setdefault(namespace, {})[key] = value
            self._persist()

    def delete_kv_config(self, namespace: str, key: str) -> None:
        with self._lock:
            entries = self._table.get(namespace)
            if entries is not None and entries.pop(key, None) is not None:
                self._persist()

    def get_kv_config(self, namespace: str, key: str) -> str | None:
        with self._lock:
            return self._table.get(namespace, {}).get(key)

    def get_kv_list_by_namespace(self, namespace: str) -> KVTable | None:
        """The namespace's entries, or None when the namespace was never written."""
        with self._lock:
            entries = self._table.get(namespace)
            return None if entries is None else KVTable(dict(entries))

    def _persist(self) -> None:
        if self._path is None:
            return
        data = orjson.dumps({"configTable": self._table}, option=orjson.OPT_INDENT_2)
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            temporary = str(self._path.with_name(self._path.name + ".tmp"))
            fd = self._fs.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            try:
                self._fs.write(fd, data, 0)
            finally:
                os.close(fd)
            self._fs.rename(temporary, str(self._path))
        except OSError as exc:
            log.error("persist KV config table to %s failed: %s", self._path, exc)
