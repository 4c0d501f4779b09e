"""A full disk: an injected ENOSPC and a real, tiny tmpfs. Puts fail cleanly, nothing is
corrupted, and everything works again once space returns."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from orbitmq.store import MessageStore, PutMessageStatus
from orbitmq.testing import FaultInjectingFileSystem
from tests.component.store.records import file_name, list_files, read_bodies, read_cq_units
from tests.conftest import StoreFactory
from tests.support import make_message

CL_SIZE = 4096


def _read_all(store: MessageStore) -> list[bytes]:
    return read_bodies(store, "TopicTest", 0)


def _fill_first_file(store: MessageStore, body_size: int) -> list[bytes]:
    """Put messages until the next one no longer fits the current commit log file."""
    acked: list[bytes] = []
    while True:
        body = f"{len(acked):04d}".encode() + b"." * (body_size - 4)
        last = store.commit_log.mapped_file_queue.last()
        if acked and last is not None and last.free_bytes < 2 * (body_size + 200):
            return acked
        result = store.put_message(make_message(body=body))
        assert result.status is PutMessageStatus.PUT_OK
        acked.append(body)


#: Both ways of creating files: preallocated (warmMapedFileEnable) or growing with the data.
WARM = pytest.mark.parametrize("warm", [True, False], ids=["preallocated", "sparse"])


@WARM
def test_injected_full_disk_fails_the_put_cleanly_and_recovers(
    store_factory: StoreFactory, tmp_path: Path, warm: bool
) -> None:
    """The next message needs a new file, whose blocks cannot be had: when it is created
    (preallocated) or when its first record is written (files that grow with their data;
    the file itself exists then, empty)."""
    fs = FaultInjectingFileSystem()
    store = store_factory(fs=fs, mapped_file_size_commit_log=CL_SIZE, warm_maped_file_enable=warm)
    acked = _fill_first_file(store, 300)
    assert list_files(store.config.commit_log_dir) == [file_name(0)]
    # Consume-queue and index files exist before the disk fills: only the commit log grows.
    assert store.wait_for_dispatch()
    fs.disk_full = True
    body = b"does not fit" + b"!" * 800
    for _ in range(3):
        result = store.put_message(make_message(body=body))
        if warm:
            assert result.status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED
            assert "cannot create a commit log file" in result.remark
        else:
            assert result.status is PutMessageStatus.UNKNOWN_ERROR
            assert "commit log write failed" in result.remark
        assert not result.is_ok
        assert result.append_result is None
        assert os.strerror(errno.ENOSPC) in result.remark
    # No partial record was left behind; the first file keeps its size and messages.
    files = list_files(store.config.commit_log_dir)
    assert files == ([file_name(0)] if warm else [file_name(0), file_name(CL_SIZE)])
    for name in files[1:]:
        assert not (Path(store.config.commit_log_dir) / name).read_bytes().strip(b"\0")
    assert os.path.getsize(Path(store.config.commit_log_dir) / file_name(0)) == CL_SIZE
    assert store.wait_for_dispatch()
    assert _read_all(store) == acked

    fs.disk_full = False
    after = [f"after-{i}".encode() + b"+" * 600 for i in range(3)]
    for i, body in enumerate(after):
        result = store.put_message(make_message(body=body))
        assert result.status is PutMessageStatus.PUT_OK
        assert result.append_result is not None
        assert result.append_result.logics_offset == len(acked) + i
    assert result.append_result is not None
    assert result.append_result.wrote_offset >= CL_SIZE
    assert list_files(store.config.commit_log_dir) == [file_name(0), file_name(CL_SIZE)]
    assert store.wait_for_dispatch()
    assert _read_all(store) == acked + after
    store.shutdown()

    reopened = store_factory(mapped_file_size_commit_log=CL_SIZE, warm_maped_file_enable=warm)
    assert reopened.recovery_report is not None
    assert reopened.recovery_report.truncated_bytes == 0
    assert _read_all(reopened) == acked + after
    # And it keeps working.
    assert reopened.put_message(make_message(body=b"next")).status is PutMessageStatus.PUT_OK
    assert reopened.wait_for_dispatch()
    assert _read_all(reopened) == [*acked, *after, b"next"]


def test_a_file_closed_when_the_next_could_not_be_made_is_whole_after_a_restart(
    store_factory: StoreFactory, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The end-of-file record went in, the next file did not: a clean restart finds a whole
    log (no torn tail cut), and the next message starts the next file."""
    root = tmp_path / "store"
    fs = FaultInjectingFileSystem()
    settings = {"mapped_file_size_commit_log": CL_SIZE, "warm_maped_file_enable": True}
    store = store_factory(root, fs=fs, **settings)
    acked = _fill_first_file(store, 300)
    fs.disk_full = True
    refused = store.put_message(make_message(body=b"!" * 800))
    assert refused.status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED
    fs.disk_full = False
    store.shutdown()

    with caplog.at_level("WARNING", logger="orbitmq.store"):
        reopened = store_factory(root, **settings)
    assert reopened.recovery_report is not None
    assert reopened.recovery_report.truncated_bytes == 0
    assert reopened.recovery_report.valid_offset == CL_SIZE
    assert not [r for r in caplog.records if "cut" in r.getMessage()]
    result = reopened.put_message(make_message(body=b"next"))
    assert result.status is PutMessageStatus.PUT_OK
    assert result.append_result is not None
    assert result.append_result.wrote_offset == CL_SIZE
    assert reopened.wait_for_dispatch()
    assert _read_all(reopened) == [*acked, b"next"]


@WARM
def test_full_disk_on_the_very_first_file(store_factory: StoreFactory, warm: bool) -> None:
    fs = FaultInjectingFileSystem()
    store = store_factory(fs=fs, warm_maped_file_enable=warm)
    fs.disk_full = True
    result = store.put_message(make_message())
    assert os.strerror(errno.ENOSPC) in result.remark
    if warm:  # the file's blocks could not be had: no file
        assert result.status is PutMessageStatus.CREATE_MAPPED_FILE_FAILED
        assert list_files(store.config.commit_log_dir) == []
    else:  # a sparse file takes no blocks; its first write could not have them
        assert result.status is PutMessageStatus.UNKNOWN_ERROR
        assert "commit log write failed" in result.remark
        assert list_files(store.config.commit_log_dir) == [file_name(0)]
    assert store.max_phy_offset == 0
    fs.disk_full = False
    result = store.put_message(make_message(body=b"first"))
    assert result.status is PutMessageStatus.PUT_OK
    assert result.append_result is not None
    assert result.append_result.logics_offset == 0
    assert result.append_result.wrote_offset == 0
    assert store.wait_for_dispatch()
    assert _read_all(store) == [b"first"]


def test_dispatch_stops_when_a_consume_queue_file_cannot_be_created_and_resumes(
    store_factory: StoreFactory,
) -> None:
    """Driven by hand (services not started) so every reput round is visible."""
    fs = FaultInjectingFileSystem()
    # The commit log preallocated: its appends need no new blocks, only the queue's do.
    store = store_factory(
        fs=fs, start=False, mapped_file_size_consume_queue=4 * 20, warm_maped_file_enable=True
    )
    bodies = [f"m{i}".encode() for i in range(7)]
    for body in bodies[:4]:
        assert store.put_message(make_message(body=body, keys="k")).is_ok
    assert store.reput_message_service.do_reput() == 4
    queue_dir = Path(store.config.consume_queue_dir) / "TopicTest" / "0"
    assert list_files(queue_dir) == [file_name(0)]

    fs.disk_full = True  # the next consume-queue unit needs a second file
    for body in bodies[4:]:
        assert store.put_message(make_message(body=body, keys="k")).status is (
            PutMessageStatus.PUT_OK
        )
    assert store.reput_message_service.do_reput() == 0
    assert store.dispatch_behind_bytes > 0
    assert store.get_max_offset_in_queue("TopicTest", 0) == 4
    # The next file may exist (consume-queue files reserve their blocks as they fill), but
    # only whole-sized and with nothing in it.
    for name in list_files(queue_dir):
        assert os.path.getsize(queue_dir / name) == 80
    assert list_files(queue_dir)[0] == file_name(0)
    for name in list_files(queue_dir)[1:]:
        assert read_cq_units(queue_dir / name) == []
    assert store.reput_message_service.do_reput() == 0  # still stuck, nothing skipped
    assert store.get_max_offset_in_queue("TopicTest", 0) == 4

    fs.disk_full = False
    assert store.reput_message_service.do_reput() == 3
    assert store.dispatch_behind_bytes == 0
    assert store.get_max_offset_in_queue("TopicTest", 0) == 7
    assert list_files(queue_dir) == [file_name(0), file_name(80)]
    assert _read_all(store) == bodies
    # Every message was indexed exactly once.
    found = store.query_message("TopicTest", "k", 64, 0, 2**62)
    assert len(found.message_buffers) == 7


def test_running_dispatch_resumes_by_itself_once_space_returns(
    store_factory: StoreFactory,
) -> None:
    fs = FaultInjectingFileSystem()
    store = store_factory(fs=fs, mapped_file_size_consume_queue=2 * 20, warm_maped_file_enable=True)
    assert store.put_message(make_message(body=b"a")).is_ok
    assert store.put_message(make_message(body=b"b")).is_ok
    assert store.wait_for_dispatch()
    fs.disk_full = True
    assert store.put_message(make_message(body=b"c")).status is PutMessageStatus.PUT_OK
    # The dispatcher cannot place it: a bounded wait proves it stays behind.
    assert not store.wait_for_dispatch(timeout_s=0.3)
    assert store.dispatch_behind_bytes > 0
    assert store.get_max_offset_in_queue("TopicTest", 0) == 2
    fs.disk_full = False
    assert store.wait_for_dispatch(timeout_s=10)
    assert store.dispatch_behind_bytes == 0
    assert _read_all(store) == [b"a", b"b", b"c"]


# -- a real full disk -------------------------------------------------------------------------


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs; skips when mounting is not permitted here."""
    mount_point = tmp_path / "tmpfs"
    mount_point.mkdir()
    try:
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount_point)],
            capture_output=True,
            text=True,
            check=False,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"cannot run mount for a 2 MiB tmpfs: {exc}")
    if done.returncode != 0:
        pytest.skip(
            f"mounting a 2 MiB tmpfs is not permitted here (mount exited {done.returncode}: "
            f"{done.stderr.strip()}); the injected full-disk tests cover the same path"
        )
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, timeout=30)


@WARM
def test_a_really_full_tmpfs_fails_cleanly_and_recovers_after_space_is_freed(
    tiny_tmpfs: Path, store_factory: StoreFactory, warm: bool
) -> None:
    ballast = tiny_tmpfs / "ballast"
    ballast.write_bytes(b"\xaa" * (512 * 1024))
    root = tiny_tmpfs / "store"
    cl_size = 128 * 1024
    store = store_factory(root, mapped_file_size_commit_log=cl_size, warm_maped_file_enable=warm)
    # Dispatch creates the consume-queue and index files; let that happen before the disk
    # fills, so the commit log is what runs out of space.
    assert store.put_message(make_message(body=b"warm-up")).is_ok
    assert store.wait_for_dispatch()
    acked: list[bytes] = [b"warm-up"]
    failure = None
    for i in range(1000):
        body = f"{i:05d}".encode() + bytes([i % 256]) * 8000
        result = store.put_message(make_message(body=body))
        if result.status is not PutMessageStatus.PUT_OK:
            failure = result
            break
        acked.append(body)
    assert failure is not None, "the 2 MiB tmpfs never filled up"
    # Preallocated: the next file cannot be had. Sparse: a write into the current file (or
    # its end-of-file record) cannot get its blocks.
    refused = (
        {PutMessageStatus.CREATE_MAPPED_FILE_FAILED}
        if warm
        else {PutMessageStatus.CREATE_MAPPED_FILE_FAILED, PutMessageStatus.UNKNOWN_ERROR}
    )
    assert failure.status in refused
    assert os.strerror(errno.ENOSPC) in failure.remark
    assert len(acked) > 10
    files = list_files(store.config.commit_log_dir)
    # Only whole files: the one that could not be allocated was removed again.
    assert files == [file_name(i * cl_size) for i in range(len(files))]
    for name in files:
        assert os.path.getsize(Path(store.config.commit_log_dir) / name) == cl_size
    # Still full: still a clean failure, and what was stored reads back.
    again = store.put_message(make_message(body=b"z" * 8000))
    assert again.status in refused
    assert store.wait_for_dispatch()
    assert _read_all(store) == acked

    ballast.unlink()  # space returns
    more = [f"more-{i}".encode() * 100 for i in range(20)]
    for body in more:
        assert store.put_message(make_message(body=body)).status is PutMessageStatus.PUT_OK
    assert store.wait_for_dispatch()
    assert _read_all(store) == acked + more
    store.shutdown()

    reopened = store_factory(root, mapped_file_size_commit_log=cl_size, warm_maped_file_enable=warm)
    assert reopened.recovery_report is not None
    assert not reopened.recovery_report.abnormal
    assert reopened.recovery_report.truncated_bytes == 0
    assert _read_all(reopened) == acked + more
    reopened.shutdown()


def test_a_failing_commit_log_write_is_answered_and_loses_nothing(
    store_factory: StoreFactory,
) -> None:
    """The device refuses a write (EIO): that put answers UNKNOWN_ERROR, nothing moves (wrote
    position, queue offsets, dispatch), and once the device is back the next puts follow
    the acknowledged ones without a gap."""
    fs = FaultInjectingFileSystem()
    store = store_factory(fs=fs)
    acked = [f"before-{i}".encode() for i in range(5)]
    for body in acked:
        assert store.put_message(make_message(body=body)).status is PutMessageStatus.PUT_OK
    end = store.commit_log.max_offset
    fs.write_error = True
    for _ in range(3):
        result = store.put_message(make_message(body=b"refused"))
        assert result.status is PutMessageStatus.UNKNOWN_ERROR
        assert "commit log write failed" in (result.remark or "")
    assert store.commit_log.max_offset == end
    fs.write_error = False
    later = [f"after-{i}".encode() for i in range(3)]
    for body in later:
        result = store.put_message(make_message(body=body))
        assert result.status is PutMessageStatus.PUT_OK
    assert store.wait_for_dispatch()
    assert _read_all(store) == acked + later
    assert store.get_max_offset_in_queue("TopicTest", 0) == len(acked) + len(later)
