"""ConsumerOffsetManager: commits, queries, the topic@group lookups and consumerOffset.json
(standard JSON and fastjson's unquoted queue ids)."""

from __future__ import annotations

import errno
from pathlib import Path

import orjson
import pytest

from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.common.errors import ConfigError
from orbitmq.testing import FaultInjectingFileSystem


def _manager(tmp_path: Path) -> ConsumerOffsetManager:
    return ConsumerOffsetManager(tmp_path / "config" / "consumerOffset.json")


def test_commit_and_query(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    assert manager.query_offset("g", "T", 0) == -1
    manager.commit_offset("10.0.0.1:5000", "g", "T", 0, 42)
    manager.commit_offset("10.0.0.1:5000", "g", "T", 1, 7)
    manager.commit_offset("10.0.0.1:5000", "g", "T", 0, 40)  # backwards is allowed, logged
    assert manager.query_offset("g", "T", 0) == 40
    assert manager.query_offset("g", "T", 1) == 7
    assert manager.query_offset("g", "T", 2) == -1
    assert manager.query_offset("other", "T", 0) == -1
    assert manager.query_offsets("g", "T") == {0: 40, 1: 7}
    assert manager.query_offsets("g", "U") is None


def test_which_topic_and_group(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.commit_offset("h", "g1", "A", 0, 1)
    manager.commit_offset("h", "g1", "B", 0, 1)
    manager.commit_offset("h", "g2", "A", 0, 1)
    assert manager.which_topic_by_consumer("g1") == {"A", "B"}
    assert manager.which_group_by_topic("A") == {"g1", "g2"}
    assert manager.which_group_by_topic("C") == set()


def test_cleaning(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    for group in ("g1", "g2"):
        for topic in ("A", "B", "C"):
            manager.commit_offset("h", group, topic, 0, 5)
    manager.clean_offset_by_topic("A")
    assert manager.which_group_by_topic("A") == set()
    manager.clean_offsets_of_missing_topics({"B"})
    assert manager.which_topic_by_consumer("g1") == {"B"}
    manager.clone_offset("g1", "g3", "B")
    assert manager.query_offset("g3", "B", 0) == 5
    manager.remove_offset("g1")
    assert manager.which_group_by_topic("B") == {"g2", "g3"}


def test_persist_round_trip(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.commit_offset("h", "g", "T", 0, 42)
    manager.commit_offset("h", "g", "%RETRY%g", 0, 3)
    assert manager.persist()
    saved = orjson.loads(Path(manager.config_path).read_bytes())
    assert saved == {"offsetTable": {"T@g": {"0": 42}, "%RETRY%g@g": {"0": 3}}}

    reloaded = _manager(tmp_path)
    reloaded.load()
    assert reloaded.offset_table() == manager.offset_table()
    assert reloaded.query_offset("g", "T", 0) == 42


def test_persist_skips_when_unchanged(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    assert manager.persist()  # the first save writes even an empty table
    assert not manager.persist()
    manager.commit_offset("h", "g", "T", 0, 1)
    assert manager.persist()
    assert not manager.persist()


def test_reads_fastjson_unquoted_queue_ids(tmp_path: Path) -> None:
    path = tmp_path / "config" / "consumerOffset.json"
    path.parent.mkdir()
    path.write_text(
        '{\n\t"offsetTable":{\n\t\t"TopicTest@please_rename_unique_group_name_4":{0:250,1:249,'
        '2:251,3:250\n\t\t},\n\t\t"%RETRY%please_rename_unique_group_name_4@'
        'please_rename_unique_group_name_4":{0:0\n\t\t}\n\t}\n}'
    )
    manager = _manager(tmp_path)
    manager.load()
    group = "please_rename_unique_group_name_4"
    assert manager.query_offsets(group, "TopicTest") == {0: 250, 1: 249, 2: 251, 3: 250}
    assert manager.query_offset(group, "%RETRY%" + group, 0) == 0


def test_bak_fallback_and_error(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.commit_offset("h", "g", "T", 0, 1)
    manager.persist()
    manager.commit_offset("h", "g", "T", 0, 2)
    manager.persist()
    path = Path(manager.config_path)
    path.write_bytes(b'{"offsetTable":{"T@g":{0:')
    reloaded = _manager(tmp_path)
    reloaded.load()
    assert reloaded.query_offset("g", "T", 0) == 1

    path.with_name(path.name + ".bak").write_bytes(b"")
    with pytest.raises(ConfigError, match=r"consumerOffset\.json"):
        _manager(tmp_path).load()


def test_missing_files_mean_an_empty_table(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.load()
    assert manager.offset_table() == {}


def test_a_failed_persist_keeps_the_saved_offsets_and_is_tried_again(tmp_path: Path) -> None:
    fs = FaultInjectingFileSystem()
    path = tmp_path / "config" / "consumerOffset.json"
    manager = ConsumerOffsetManager(path, fs=fs)
    manager.commit_offset("h", "g", "T", 0, 5)
    assert manager.persist()
    manager.commit_offset("h", "g", "T", 0, 9)
    fs.rename_error = errno.EROFS
    with pytest.raises(OSError, match=r"consumerOffset\.json"):
        manager.persist()
    reloaded = ConsumerOffsetManager(path)
    reloaded.load()
    assert reloaded.query_offset("g", "T", 0) == 5
    fs.rename_error = None
    assert manager.persist()  # the change was not forgotten
    reloaded.load()
    assert reloaded.query_offset("g", "T", 0) == 9
