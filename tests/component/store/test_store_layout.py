"""The store directory is RocketMQ's (SPEC R16), and reads can be bounded in bytes."""

from __future__ import annotations

from pathlib import Path

from orbitmq.common import ConfigFile
from tests.conftest import StoreFactory
from tests.support import make_message

CONFIG_NAMES = ("topics", "subscriptionGroup", "consumerOffset", "delayOffset")


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.iterdir()}


def test_store_directory_is_rocketmq_layout(store_factory: StoreFactory, tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = store_factory(root)
    assert store.put_message(make_message("LayoutTopic", queue_id=3, keys="k1")).is_ok
    assert store.wait_for_dispatch()
    for name in CONFIG_NAMES:
        config = ConfigFile(store.config.config_file(name))
        config.save({"version": 1})
        config.save({"version": 2})
    assert _tree(root) == {
        "abort",
        "checkpoint",
        "config",
        "commitlog",
        "consumequeue",
        "index",
        "lock",
    }
    assert (root / "consumequeue" / "LayoutTopic" / "3").is_dir()
    assert _tree(root / "config") == {f"{n}.json{s}" for n in CONFIG_NAMES for s in ("", ".bak")}
    store.shutdown()
    # The lock file stays (as RocketMQ's): the lock itself dies with its holder.
    assert _tree(root) == {"checkpoint", "config", "commitlog", "consumequeue", "index", "lock"}


def test_a_read_stops_at_max_total_bytes_but_returns_at_least_one(
    store_factory: StoreFactory,
) -> None:
    store = store_factory()
    sizes = []
    for i in range(10):
        result = store.put_message(make_message(body=bytes(100 + i)))
        assert result.append_result is not None
        sizes.append(result.append_result.wrote_bytes)
    assert store.wait_for_dispatch()
    got = store.get_message("g", "TopicTest", 0, 0, 32, max_total_bytes=sizes[0] + sizes[1] + 5)
    assert got.message_count == 2
    assert got.next_begin_offset == 2
    one = store.get_message("g", "TopicTest", 0, 0, 32, max_total_bytes=1)
    assert one.message_count == 1
