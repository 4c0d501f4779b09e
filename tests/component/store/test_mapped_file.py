"""MappedFile / MappedFileQueue: segment names, sizes, rolling, lookup and loading."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orbitmq.common import OS_FILE_SYSTEM
from orbitmq.store import MappedFile, MappedFileQueue, StoreError
from tests.component.store.records import file_name, list_files
from tests.conftest import StoreFactory
from tests.support import make_message

SIZE = 4096


def _byte_at(offset: int) -> int:
    """The byte ``_fill`` writes at queue ``offset``: one value per 512-byte chunk."""
    return offset // 512 % 251 + 1


def _fill(queue: MappedFileQueue, total: int) -> None:
    written = 0
    while written < total:
        mapped = queue.last_or_create(0)
        assert mapped.append(bytes([_byte_at(written)]) * 512)
        written += 512


def test_files_are_named_by_zero_padded_start_offset_and_have_the_configured_size(
    tmp_path: Path,
) -> None:
    queue = MappedFileQueue(str(tmp_path / "seg"), SIZE, OS_FILE_SYSTEM)
    _fill(queue, 3 * SIZE + 512)
    names = list_files(tmp_path / "seg")
    assert names == [
        "00000000000000000000",
        "00000000000000004096",
        "00000000000000008192",
        "00000000000000012288",
    ]
    assert all(len(n) == 20 for n in names)
    for name in names:
        assert os.path.getsize(tmp_path / "seg" / name) == SIZE
    assert [m.file_from_offset for m in queue.mapped_files] == [0, SIZE, 2 * SIZE, 3 * SIZE]
    assert queue.max_offset == 3 * SIZE + 512
    queue.shutdown()


def test_a_full_file_rolls_to_a_new_one_and_append_refuses_what_does_not_fit(
    tmp_path: Path,
) -> None:
    queue = MappedFileQueue(str(tmp_path / "seg"), SIZE, OS_FILE_SYSTEM)
    first = queue.last_or_create(0)
    assert first.append(b"x" * (SIZE - 100))
    assert not first.append(b"y" * 101)  # does not fit: nothing written, position unchanged
    assert first.wrote_position == SIZE - 100
    assert queue.last_or_create(0) is first  # not full yet: no new file
    assert first.append(b"z" * 100)
    assert first.is_full()
    second = queue.last_or_create(0)
    assert second is not first
    assert second.file_from_offset == SIZE
    assert len(queue.mapped_files) == 2
    queue.shutdown()


def test_first_file_starts_at_the_file_holding_the_start_offset(tmp_path: Path) -> None:
    queue = MappedFileQueue(str(tmp_path / "seg"), SIZE, OS_FILE_SYSTEM)
    mapped = queue.last_or_create(5 * SIZE + 123)
    assert mapped.file_from_offset == 5 * SIZE
    assert list_files(tmp_path / "seg") == [file_name(5 * SIZE)]
    assert queue.min_offset == 5 * SIZE
    queue.shutdown()


def test_find_by_offset(tmp_path: Path) -> None:
    queue = MappedFileQueue(str(tmp_path / "seg"), SIZE, OS_FILE_SYSTEM)
    assert queue.find_by_offset(0) is None
    _fill(queue, 3 * SIZE)
    files = queue.mapped_files
    assert queue.find_by_offset(0) is files[0]
    assert queue.find_by_offset(SIZE - 1) is files[0]
    assert queue.find_by_offset(SIZE) is files[1]
    assert queue.find_by_offset(2 * SIZE + 7) is files[2]
    assert queue.find_by_offset(3 * SIZE) is None
    assert queue.find_by_offset(3 * SIZE, return_first_on_not_found=True) is files[0]
    queue.shutdown()


def test_load_opens_existing_files_in_order_with_their_contents(tmp_path: Path) -> None:
    directory = str(tmp_path / "seg")
    queue = MappedFileQueue(directory, SIZE, OS_FILE_SYSTEM)
    _fill(queue, 2 * SIZE + 1024)
    queue.flush(0)
    queue.shutdown()
    # Something that is not a segment is ignored.
    Path(directory, "notes.txt").write_text("not a segment")

    loaded = MappedFileQueue(directory, SIZE, OS_FILE_SYSTEM)
    loaded.load()
    assert [m.file_from_offset for m in loaded.mapped_files] == [0, SIZE, 2 * SIZE]
    assert all(m.file_size == SIZE for m in loaded.mapped_files)
    mapped = loaded.find_by_offset(SIZE + 600)
    assert mapped is not None
    assert bytes(mapped.select(600, 1)) == bytes([_byte_at(SIZE + 600)])
    assert bytes(loaded.mapped_files[2].select(0, 1024)) == (
        bytes([_byte_at(2 * SIZE)]) * 512 + bytes([_byte_at(2 * SIZE + 512)]) * 512
    )
    loaded.shutdown()


def test_load_rejects_a_file_of_the_wrong_size(tmp_path: Path) -> None:
    directory = tmp_path / "seg"
    directory.mkdir()
    (directory / file_name(0)).write_bytes(b"\0" * SIZE)
    # Data in it: not an empty file whose creation a crash cut short (those are removed).
    (directory / file_name(SIZE)).write_bytes(b"\1" * 1000)
    queue = MappedFileQueue(str(directory), SIZE, OS_FILE_SYSTEM)
    with pytest.raises(StoreError) as raised:
        queue.load()
    message = str(raised.value)
    assert file_name(SIZE) in message
    assert "1000" in message
    assert str(SIZE) in message
    assert "configured" in message


def test_mapped_file_of_the_wrong_size_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / file_name(0)
    path.write_bytes(b"\0" * 123)
    with pytest.raises(StoreError, match=r"123 bytes, not the configured 4096"):
        MappedFile(str(path), SIZE, OS_FILE_SYSTEM, create=False)


def test_store_refuses_to_load_a_commit_log_file_of_another_size(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    store = store_factory(mapped_file_size_commit_log=8192)
    assert store.put_message(make_message()).is_ok
    store.shutdown()
    with pytest.raises(StoreError, match="not the configured 4096"):
        store_factory(mapped_file_size_commit_log=4096)
