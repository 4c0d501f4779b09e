"""Offset stores: the broadcasting consumer's offsets.json (R22) and the clustering consumer's
broker-backed table (R21)."""

from __future__ import annotations

import inspect
from pathlib import Path

import orjson
import pytest

from orbitmq.client.offset_store import (
    LocalFileOffsetStore,
    OffsetNotFoundError,
    OffsetSerializeWrapper,
    OffsetStore,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
    local_offset_store_path,
)
from orbitmq.common import ConfigError, MessageQueue

MQ0 = MessageQueue("TopicTest", "broker-a", 0)
MQ1 = MessageQueue("TopicTest", "broker-a", 1)
OTHER = MessageQueue("Other", "broker-b", 0)
CLIENT_ID = "10.0.0.7@12345"
GROUP = "please_rename_unique_group_name"

# What RocketMQ 4.9's client writes (fastjson, toJson(true)): MessageQueue keys unquoted.
FASTJSON_OFFSETS = b"""{
\t"offsetTable":{{
\t\t\t"brokerName":"broker-a",
\t\t\t"queueId":0,
\t\t\t"topic":"TopicTest"
\t\t}:42,{
\t\t\t"brokerName":"broker-a",
\t\t\t"queueId":1,
\t\t\t"topic":"TopicTest"
\t\t}:7
\t}
}"""


def local(tmp_path: Path) -> LocalFileOffsetStore:
    return LocalFileOffsetStore(CLIENT_ID, GROUP, store_dir=tmp_path)


ROLE_METHODS = [
    "load",
    "update_offset",
    "read_offset",
    "persist_all",
    "persist",
    "remove_offset",
    "clone_offset_table",
    "update_consume_offset_to_broker",
]


@pytest.mark.parametrize("cls", [LocalFileOffsetStore, RemoteBrokerOffsetStore])
def test_both_stores_fill_the_role(cls: type) -> None:
    for name in ROLE_METHODS:
        assert inspect.iscoroutinefunction(getattr(cls, name)) == inspect.iscoroutinefunction(
            getattr(OffsetStore, name)
        ), name


# --- LocalFileOffsetStore -------------------------------------------------------------------


def test_path_layout_is_rocketmqs(tmp_path: Path) -> None:
    store = local(tmp_path)
    assert store.path == tmp_path / CLIENT_ID / GROUP / "offsets.json"


def test_default_dir_is_under_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    expected = tmp_path / ".rocketmq_offsets" / CLIENT_ID / GROUP / "offsets.json"
    assert LocalFileOffsetStore(CLIENT_ID, GROUP).path == expected
    assert local_offset_store_path("~/x", "c", "g") == tmp_path / "x" / "c" / "g" / "offsets.json"


async def test_round_trip_through_a_real_file(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.update_offset(MQ0, 10, increase_only=False)
    store.update_offset(MQ1, 20, increase_only=False)
    await store.persist_all({MQ0, MQ1})
    assert store.path.is_file()

    reloaded = local(tmp_path)
    reloaded.load()
    assert reloaded.clone_offset_table("") == {MQ0: 10, MQ1: 20}
    assert await reloaded.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 10


async def test_file_is_offset_serialize_wrapper_json(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.update_offset(MQ0, 5, increase_only=False)
    await store.persist(MQ0)
    raw = orjson.loads(store.path.read_bytes())
    key = orjson.dumps({"brokerName": "broker-a", "queueId": 0, "topic": "TopicTest"}).decode()
    assert raw == {"offsetTable": {key: 5}}


def test_loads_the_file_rocketmq_writes(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(FASTJSON_OFFSETS)
    store.load()
    assert store.clone_offset_table("TopicTest") == {MQ0: 42, MQ1: 7}


async def test_bak_is_used_when_offsets_json_is_corrupt(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.update_offset(MQ0, 1, increase_only=False)
    await store.persist_all([MQ0])
    store.update_offset(MQ0, 2, increase_only=False)
    await store.persist_all([MQ0])  # offsets.json holds 2, offsets.json.bak holds 1
    assert Path(f"{store.path}.bak").is_file()
    store.path.write_bytes(b'{"offsetTable":{{"topic"')

    reloaded = local(tmp_path)
    reloaded.load()
    assert reloaded.clone_offset_table("") == {MQ0: 1}


def test_load_refuses_when_neither_file_parses(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(b"not json")
    Path(f"{store.path}.bak").write_bytes(b"{nor this")
    with pytest.raises(ConfigError):
        store.load()


def test_load_without_a_file_is_an_empty_table(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.load()
    assert store.clone_offset_table("") == {}


async def test_persist_all_merges_into_the_file_and_keeps_other_queues(tmp_path: Path) -> None:
    first = local(tmp_path)
    first.update_offset(OTHER, 99, increase_only=False)
    await first.persist_all([OTHER])

    store = local(tmp_path)
    store.update_offset(MQ0, 3, increase_only=False)
    store.update_offset(MQ1, 4, increase_only=False)
    await store.persist_all([MQ0])  # MQ1 is not asked for: not written
    on_disk = OffsetSerializeWrapper.from_json(store.path.read_bytes()).offset_table
    assert on_disk == {OTHER: 99, MQ0: 3}
    assert store.clone_offset_table("") == {MQ0: 3, MQ1: 4}  # memory left alone


async def test_persist_all_of_nothing_writes_nothing(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.update_offset(MQ0, 3, increase_only=False)
    await store.persist_all([])
    assert not store.path.exists()


async def test_local_read_offset_types(tmp_path: Path) -> None:
    writer = local(tmp_path)
    writer.update_offset(MQ0, 8, increase_only=False)
    await writer.persist(MQ0)

    store = local(tmp_path)
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == -1
    assert await store.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 8
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 8  # cached
    store.update_offset(MQ0, 11, increase_only=False)
    assert await store.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 11
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 8
    assert await store.read_offset(MQ1, ReadOffsetType.READ_FROM_STORE) == -1


async def test_local_read_from_unreadable_store_is_minus_one(tmp_path: Path) -> None:
    store = local(tmp_path)
    store.path.parent.mkdir(parents=True)
    store.path.write_bytes(b"garbage")
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == -1


async def test_local_store_never_talks_to_a_broker(tmp_path: Path) -> None:
    store = local(tmp_path)
    await store.update_consume_offset_to_broker(MQ0, 5, is_oneway=False)
    assert not store.path.exists()


# --- update / remove / clone (both stores) --------------------------------------------------


@pytest.fixture(params=["local", "remote"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> OffsetStore:
    if request.param == "local":
        return local(tmp_path)
    return RemoteBrokerOffsetStore(GROUP, FakeBackend())


def test_increase_only_updates(store: OffsetStore) -> None:
    store.update_offset(MQ0, 10, increase_only=True)  # the first value is taken as it is
    store.update_offset(MQ0, 5, increase_only=True)
    assert store.clone_offset_table("") == {MQ0: 10}
    store.update_offset(MQ0, 12, increase_only=True)
    assert store.clone_offset_table("") == {MQ0: 12}
    store.update_offset(MQ0, 3, increase_only=False)  # a reset goes backwards
    assert store.clone_offset_table("") == {MQ0: 3}


def test_clone_by_topic_and_remove(store: OffsetStore) -> None:
    store.update_offset(MQ0, 1, increase_only=False)
    store.update_offset(OTHER, 2, increase_only=False)
    assert store.clone_offset_table("TopicTest") == {MQ0: 1}
    assert store.clone_offset_table("  ") == {MQ0: 1, OTHER: 2}
    store.remove_offset(MQ0)
    store.remove_offset(MQ1)  # unknown: nothing happens
    assert store.clone_offset_table("") == {OTHER: 2}


# --- RemoteBrokerOffsetStore ----------------------------------------------------------------


class FakeBackend:
    """The broker side: committed offsets per (group, queue); records every call."""

    def __init__(self) -> None:
        self.committed: dict[tuple[str, MessageQueue], int] = {}
        self.updates: list[tuple[str, MessageQueue, int, bool]] = []
        self.queries: list[tuple[str, MessageQueue]] = []
        self.fail_with: Exception | None = None
        self.fail_update_for: set[MessageQueue] = set()

    async def query_consumer_offset(self, group: str, mq: MessageQueue) -> int:
        self.queries.append((group, mq))
        if self.fail_with is not None:
            raise self.fail_with
        try:
            return self.committed[group, mq]
        except KeyError:
            raise OffsetNotFoundError(f"no offset for {group} on {mq}") from None

    async def update_consumer_offset(
        self, group: str, mq: MessageQueue, offset: int, oneway: bool
    ) -> None:
        if mq in self.fail_update_for:
            raise ConnectionError("broker unreachable")
        self.updates.append((group, mq, offset, oneway))
        self.committed[group, mq] = offset


def remote() -> tuple[FakeBackend, RemoteBrokerOffsetStore]:
    backend = FakeBackend()
    return backend, RemoteBrokerOffsetStore(GROUP, backend)


async def test_read_from_store_found_replaces_memory() -> None:
    backend, store = remote()
    backend.committed[GROUP, MQ0] = 77
    store.update_offset(MQ0, 100, increase_only=False)
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == 77
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == 77
    assert backend.queries == [(GROUP, MQ0)]


async def test_read_from_store_not_found_is_minus_one() -> None:
    _, store = remote()
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == -1
    assert store.clone_offset_table("") == {}


@pytest.mark.parametrize("error", [ConnectionError("down"), TimeoutError(), RuntimeError("x")])
async def test_read_from_store_error_is_minus_two(error: Exception) -> None:
    backend, store = remote()
    backend.fail_with = error
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_STORE) == -2
    assert await store.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -2


async def test_memory_reads() -> None:
    backend, store = remote()
    backend.committed[GROUP, MQ0] = 5
    assert await store.read_offset(MQ0, ReadOffsetType.READ_FROM_MEMORY) == -1
    assert backend.queries == []  # memory only never asks the broker
    store.update_offset(MQ0, 9, increase_only=False)
    assert await store.read_offset(MQ0, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == 9
    assert backend.queries == []
    assert await store.read_offset(MQ1, ReadOffsetType.MEMORY_FIRST_THEN_STORE) == -1
    assert backend.queries == [(GROUP, MQ1)]


async def test_persist_all_commits_each_queue_oneway_and_drops_unused() -> None:
    backend, store = remote()
    store.update_offset(MQ0, 10, increase_only=False)
    store.update_offset(MQ1, 11, increase_only=False)
    store.update_offset(OTHER, 12, increase_only=False)
    await store.persist_all({MQ0, MQ1})
    assert sorted(backend.updates) == [(GROUP, MQ0, 10, True), (GROUP, MQ1, 11, True)]
    # OTHER is no longer assigned to this consumer: its entry goes, as RocketMQ's.
    assert store.clone_offset_table("") == {MQ0: 10, MQ1: 11}


async def test_persist_all_of_nothing_does_nothing() -> None:
    backend, store = remote()
    store.update_offset(MQ0, 10, increase_only=False)
    await store.persist_all(set())
    assert backend.updates == []
    assert store.clone_offset_table("") == {MQ0: 10}


async def test_persist_all_goes_on_after_one_queue_fails() -> None:
    backend, store = remote()
    backend.fail_update_for = {MQ0}
    store.update_offset(MQ0, 10, increase_only=False)
    store.update_offset(MQ1, 11, increase_only=False)
    await store.persist_all([MQ0, MQ1])
    assert backend.updates == [(GROUP, MQ1, 11, True)]
    assert store.clone_offset_table("") == {MQ0: 10, MQ1: 11}


async def test_persist_one_queue() -> None:
    backend, store = remote()
    await store.persist(MQ0)  # nothing known: nothing sent
    store.update_offset(MQ0, 4, increase_only=False)
    await store.persist(MQ0)
    assert backend.updates == [(GROUP, MQ0, 4, True)]


async def test_update_consume_offset_to_broker_passes_oneway_and_raises() -> None:
    backend, store = remote()
    await store.update_consume_offset_to_broker(MQ0, 6, is_oneway=False)
    assert backend.updates == [(GROUP, MQ0, 6, False)]
    backend.fail_update_for = {MQ1}
    with pytest.raises(ConnectionError):
        await store.update_consume_offset_to_broker(MQ1, 6, is_oneway=True)
