"""IndexService: the index files of a store, named by the store time of their first entry."""

from __future__ import annotations

import datetime as dt
import logging
import os
import threading

from orbitmq.common import sys_flag as sf
from orbitmq.common.file_system import FileSystem
from orbitmq.store.dispatch_batch import DispatchBatch
from orbitmq.store.index_file import IndexFile, index_file_size
from orbitmq.store.message_store_config import MessageStoreConfig

log = logging.getLogger(__name__)

#: A query end later than any store time.
_NO_END = 2**62


def timestamp_file_name(timestamp_ms: int) -> str:
    """RocketMQ's index file name: local time as yyyyMMddHHmmssSSS."""
    moment = dt.datetime.fromtimestamp(timestamp_ms / 1000)
    return moment.strftime("%Y%m%d%H%M%S") + f"{timestamp_ms % 1000:03d}"


class IndexService:
    """Owns the list of index files: builds entries from dispatch requests, answers queries.

    RocketMQ names a new file by the wall clock; here the name is the store time of the
    file's first message, so rebuilding the index from the commit log gives the same files.
    The dispatcher thread writes; queries may come from any thread.
    """

    def __init__(self, config: MessageStoreConfig, fs: FileSystem):
        self.config = config
        self._fs = fs
        self.index_files: list[IndexFile] = []
        self._prefixes: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def load(self) -> None:
        directory = self.config.index_dir
        if not os.path.isdir(directory):
            return
        expected = index_file_size(self.config.max_hash_slot_num, self.config.max_index_num)
        files = []
        for name in sorted(os.listdir(directory)):
            path = os.path.join(directory, name)
            if not name.isdigit() or os.path.getsize(path) != expected:
                log.warning("ignoring %s: not an index file of the configured size", path)
                continue
            files.append(
                IndexFile(
                    path,
                    self.config.max_hash_slot_num,
                    self.config.max_index_num,
                    self._fs,
                    create=False,
                    preallocate=self.config.warm_maped_file_enable,
                )
            )
        self.index_files = files
        if files:
            _populate_slots_soon(files[-1])  # the file keys go to until it is full
            repaired = files[-1].repair()
            if repaired:
                log.warning(
                    "index %s: %d slot(s) of an unfinished update undone",
                    files[-1].file_name,
                    repaired,
                )

    @property
    def end_phy_offset(self) -> int:
        """Commit log offset of the last indexed message, or -1 when nothing is indexed.

        A file created just before a crash may still be empty: the one before it counts.
        """
        for index_file in reversed(self.index_files):
            if index_file.index_count > 1:
                return index_file.end_phy_offset
        return -1

    def truncate(self, phy_offset: int) -> int:
        """Delete index files holding entries at or past ``phy_offset``; returns their
        begin offset (from where they must be rebuilt), or -1 when none was deleted."""
        rebuild_from = -1
        with self._lock:
            kept = []
            for index_file in self.index_files:
                if index_file.end_phy_offset >= phy_offset and index_file.index_count > 1:
                    rebuild_from = (
                        index_file.begin_phy_offset
                        if rebuild_from < 0
                        else min(rebuild_from, index_file.begin_phy_offset)
                    )
                    index_file.destroy()
                else:
                    kept.append(index_file)
            self.index_files = kept
        return rebuild_from

    def build_index(self, batch: DispatchBatch) -> None:
        """Index each record's UNIQ_KEY and every KEYS entry as ``topic#key``, in log order."""
        indexed_until = self.end_phy_offset
        keys: list[bytes] = []
        key_offsets: list[int] = []
        key_stamps: list[int] = []
        prefixes = self._prefixes
        for topic, uniq_key, raw_keys, offset, stamp, flags in zip(
            batch.topics,
            batch.uniq_keys,
            batch.keys,
            batch.commit_log_offsets,
            batch.store_timestamps,
            batch.sys_flags,
            strict=True,
        ):
            if uniq_key is None and raw_keys is None:
                continue
            rolled_back = (flags & sf.TRANSACTION_ROLLBACK_TYPE) == sf.TRANSACTION_ROLLBACK_TYPE
            if offset < indexed_until or rolled_back:
                continue  # already indexed (recovery dispatches again), or rolled back
            prefix = prefixes.get(topic)
            if prefix is None:
                prefix = prefixes[topic] = topic.encode() + b"#"
            record_keys = [uniq_key] if uniq_key else []
            if raw_keys:
                record_keys.extend(k for k in raw_keys.split(b" ") if k)
            if offset == indexed_until:
                # The last record indexed: its keys may have been cut between a full file
                # and the next one by a crash. Put again only those not found.
                record_keys = [k for k in record_keys if not self._has_entry(prefix, k, offset)]
            for key in record_keys:
                keys.append(prefix + key)
                key_offsets.append(offset)
                key_stamps.append(stamp)
        if keys:
            self._put_keys(keys, key_offsets, key_stamps)

    def _has_entry(self, prefix: bytes, key: bytes, phy_offset: int) -> bool:
        found: list[int] = []
        for index_file in reversed(self.index_files):
            index_file.select_phy_offset(prefix.decode(), key.decode(), 64, 0, _NO_END, found)
            if phy_offset in found:
                return True
        return False

    def _put_keys(
        self,
        keys: list[bytes],
        offsets: list[int],
        stamps: list[int],
    ) -> None:
        done = 0
        while done < len(keys):
            index_file = self._writable_file(stamps[done])
            done += index_file.put_keys(keys[done:], offsets[done:], stamps[done:])

    def _writable_file(self, timestamp: int) -> IndexFile:
        files = self.index_files
        if files and not files[-1].is_write_full():
            return files[-1]
        return self._new_file(timestamp)

    def _new_file(self, timestamp: int) -> IndexFile:
        """A new file named by ``timestamp``; raises OSError when it cannot be created."""
        os.makedirs(self.config.index_dir, exist_ok=True)
        taken = {os.path.basename(f.file_name) for f in self.index_files}
        name = timestamp_file_name(timestamp)
        while name in taken or os.path.exists(os.path.join(self.config.index_dir, name)):
            timestamp += 1
            name = timestamp_file_name(timestamp)
        index_file = IndexFile(
            os.path.join(self.config.index_dir, name),
            self.config.max_hash_slot_num,
            self.config.max_index_num,
            self._fs,
            create=True,
            preallocate=self.config.warm_maped_file_enable,
        )
        _populate_slots_soon(index_file)
        with self._lock:
            previous = self.index_files[-1] if self.index_files else None
            self.index_files = [*self.index_files, index_file]
        if previous is not None:
            previous.flush()
        return index_file

    def query_offset(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> tuple[list[int], int, int]:
        """Offsets of messages whose ``topic#key`` hash matches, newest files first, plus the
        last file's end timestamp and end offset."""
        found: list[int] = []
        files = self.index_files
        last_ts = files[-1].end_timestamp if files else 0
        last_offset = files[-1].end_phy_offset if files else 0
        for index_file in reversed(files):
            if len(found) >= max_num:
                break
            if index_file.is_time_matched(begin, end):
                index_file.select_phy_offset(topic + "#", key, max_num, begin, end, found)
            if index_file.begin_timestamp < begin:
                break
        return found, last_ts, last_offset

    def delete_expired_file(self, phy_min_offset: int) -> int:
        """Delete files (never the last) whose every entry is older than ``phy_min_offset``."""
        with self._lock:
            files = self.index_files
            doomed = [f for f in files[:-1] if f.end_phy_offset < phy_min_offset]
            self.index_files = [f for f in files if f not in doomed]
        for index_file in doomed:
            index_file.destroy()
        return len(doomed)

    def flush(self) -> int:
        """Sync the files; the end timestamp covered, for the checkpoint."""
        files = self.index_files
        for index_file in files[-2:]:
            index_file.flush()
        return files[-1].end_timestamp if files else 0

    def shutdown(self) -> None:
        for index_file in self.index_files:
            index_file.flush()
            index_file.shutdown()

    def destroy(self) -> None:
        for index_file in self.index_files:
            index_file.destroy()
        self.index_files = []


def _populate_slots_soon(index_file: IndexFile) -> None:
    """Populate the file's slot table (``IndexFile.populate_slots``) on a thread of its own:
    off the dispatch path, up to tens of milliseconds of kernel time for the default table."""
    threading.Thread(
        target=index_file.populate_slots, name="IndexSlotPopulate", daemon=True
    ).start()
