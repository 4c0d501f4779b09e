"""The store's half of RocketMQ 5's cold data flow control: which records are cold (the cold
area by accessMessageInMemoryHotRatio, and with coldDataScanEnable the sampled page cache),
a read's coldDataSum once a ``ColdDataCheckService`` counts for the commit log, and the
commit log's read mode (dataReadAheadEnable)."""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, load_broker_config
from orbitmq.common.clock import SYSTEM_CLOCK
from orbitmq.common.errors import ConfigError
from orbitmq.filter import TagMessageFilter, build_subscription_data
from orbitmq.store import ColdDataCheckService, MessageStore, message_reader
from orbitmq.store.mapped_file import MappedFile
from orbitmq.store.message_store_config import MessageStoreConfig
from tests.conftest import StoreFactory
from tests.eventually import eventually
from tests.support import make_message

BODY_BYTES = 1000
#: With a pretend RAM of 100 KiB, accessMessageInMemoryHotRatio 26 leaves the last 26 KiB
#: of the commit log out of the cold area: about the last 24 of the 100 messages put.
PRETEND_RAM_BYTES = 100 * 1024


@pytest.fixture
def pretend_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_reader, "TOTAL_PHYSICAL_MEMORY", PRETEND_RAM_BYTES)


def _put(store: MessageStore, count: int) -> None:
    for i in range(count):
        body = f"m{i}:".encode().ljust(BODY_BYTES, b".")
        assert store.put_message(make_message(body=body, tags="TagA")).is_ok
    assert store.wait_for_dispatch()


def _counting(store: MessageStore) -> ColdDataCheckService:
    """A check service attached to ``store``'s commit log, as the broker makes one."""
    service = ColdDataCheckService(store.config, store.commit_log, SYSTEM_CLOCK)
    service.attach()
    return service


def _drop_from_page_cache(mapped: MappedFile) -> None:
    mapped.buffer.flush()
    mapped.release_pages()
    with open(mapped.file_name, "rb") as file:
        os.fsync(file.fileno())
        os.posix_fadvise(file.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def test_rocketmqs_keys_and_defaults(tmp_path: Path) -> None:
    store, broker = MessageStoreConfig(), BrokerConfig()
    assert (
        store.cold_data_flow_control_enable,
        store.cold_data_scan_enable,
        store.data_read_ahead_enable,
        store.timer_cold_data_check_interval_ms,
        store.sample_steps,
        store.access_message_in_memory_hot_ratio,
    ) == (False, False, True, 60_000, 32, 26)
    assert (
        broker.cold_ctr_strategy_enable,
        broker.use_pid_cold_ctr_strategy,
        broker.cg_cold_read_threshold,
        broker.global_cold_read_threshold,
    ) == (False, True, 3 * 1024 * 1024, 100 * 1024 * 1024)
    conf = tmp_path / "broker.conf"
    conf.write_text(
        "coldDataFlowControlEnable=true\ncoldDataScanEnable=true\ndataReadAheadEnable=false\n"
        "timerColdDataCheckIntervalMs=1000\nsampleSteps=8\naccessMessageInMemoryHotRatio=5\n"
        "coldCtrStrategyEnable=true\nusePIDColdCtrStrategy=false\n"
        "cgColdReadThreshold=1024\nglobalColdReadThreshold=4096\n"
    )
    loaded = load_broker_config(str(conf), environ={})
    assert (
        loaded.store.cold_data_flow_control_enable,
        loaded.store.cold_data_scan_enable,
        loaded.store.data_read_ahead_enable,
        loaded.store.timer_cold_data_check_interval_ms,
        loaded.store.sample_steps,
        loaded.store.access_message_in_memory_hot_ratio,
    ) == (True, True, False, 1000, 8, 5)
    assert (
        loaded.broker.cold_ctr_strategy_enable,
        loaded.broker.use_pid_cold_ctr_strategy,
        loaded.broker.cg_cold_read_threshold,
        loaded.broker.global_cold_read_threshold,
    ) == (True, False, 1024, 4096)
    conf.write_text("accessMessageInMemoryHotRatio=101\n")
    with pytest.raises(ConfigError, match="accessMessageInMemoryHotRatio: 101"):
        load_broker_config(str(conf), environ={})
    conf.write_text("timerColdDataCheckIntervalMs=0\n")
    with pytest.raises(ConfigError, match="timerColdDataCheckIntervalMs: 0"):
        load_broker_config(str(conf), environ={})


@pytest.mark.usefixtures("pretend_ram")
@pytest.mark.parametrize("tag", [None, "TagA"])  # the run path, and the per-message loop
def test_reads_in_the_cold_area_count_their_bytes(
    store_factory: StoreFactory, tag: str | None
) -> None:
    store = store_factory(cold_data_flow_control_enable=True)
    _put(store, 100)
    message_filter = TagMessageFilter(build_subscription_data("TopicTest", tag or "*"))
    assert store.get_message("g", "TopicTest", 0, 0, 8, message_filter).cold_data_sum == 0
    service = _counting(store)
    cold = store.get_message("g", "TopicTest", 0, 0, 8, message_filter)
    assert cold.message_count == 8
    assert cold.cold_data_sum == cold.buffer_total_size > 0
    end = store.commit_log.max_offset
    assert service.check_in_cold_area(end - 27 * 1024, end)
    assert not service.check_in_cold_area(end - 26 * 1024, end)
    hot = store.get_message("g", "TopicTest", 0, 95, 8, message_filter)
    assert hot.message_count == 5
    assert hot.cold_data_sum == 0


@pytest.mark.usefixtures("pretend_ram")
def test_nothing_is_counted_while_the_flow_control_is_off(store_factory: StoreFactory) -> None:
    store = store_factory()
    _put(store, 100)
    service = _counting(store)
    assert store.get_message("g", "TopicTest", 0, 0, 8).cold_data_sum == 0
    assert service.is_data_in_page_cache(0)
    store.config.access_message_in_memory_hot_ratio = 50
    store.config.cold_data_flow_control_enable = True  # read per call: a live switch
    assert store.get_message("g", "TopicTest", 0, 0, 8).cold_data_sum > 0
    assert not service.is_data_in_page_cache(0)
    assert store.get_message("g", "TopicTest", 0, 60, 8).cold_data_sum == 0  # last 50 KiB


@pytest.mark.usefixtures("pretend_ram")
def test_with_the_scan_only_pages_out_of_the_page_cache_are_cold(
    store_factory: StoreFactory,
) -> None:
    store = store_factory(cold_data_flow_control_enable=True, cold_data_scan_enable=True)
    _put(store, 100)
    service = _counting(store)
    service.scan_files_in_page_cache()
    # Just written: in the page cache, so not cold although in the cold area.
    assert store.get_message("g", "TopicTest", 0, 0, 8).cold_data_sum == 0
    mapped = store.commit_log.mapped_file_queue.mapped_files[0]
    _drop_from_page_cache(mapped)
    if mapped.is_resident(0, mmap.PAGESIZE):
        pytest.skip("this file system keeps the pages (tmpfs?)")
    # The table is the last scan's: still in memory until the next scan.
    assert store.get_message("g", "TopicTest", 0, 0, 8).cold_data_sum == 0
    service.scan_files_in_page_cache()
    got = store.get_message("g", "TopicTest", 0, 0, 8)
    assert got.cold_data_sum == got.buffer_total_size > 0
    # A file the scan has not seen counts as in memory (RocketMQ's answer).
    service._page_cache_table = {}
    assert store.get_message("g", "TopicTest", 0, 0, 8).cold_data_sum == 0


@pytest.mark.usefixtures("pretend_ram")
def test_the_scan_runs_on_its_interval(store_factory: StoreFactory) -> None:
    store = store_factory(
        cold_data_flow_control_enable=True,
        cold_data_scan_enable=True,
        timer_cold_data_check_interval_ms=50,
    )
    _put(store, 100)
    service = _counting(store)
    service.start()
    try:
        mapped = store.commit_log.mapped_file_queue.mapped_files[0]
        _drop_from_page_cache(mapped)
        if mapped.is_resident(0, mmap.PAGESIZE):
            pytest.skip("this file system keeps the pages (tmpfs?)")
        # Neither the reads' views nor mincore touch the pages: they stay out until read.
        eventually(
            lambda: store.get_message("g", "TopicTest", 0, 0, 8).cold_data_sum > 0 or None,
            what="a scan found the dropped pages",
        )
    finally:
        service.shutdown()


def _vm_flags(path: str) -> set[str]:
    """The VmFlags of this process's mapping of ``path`` (/proc/self/smaps)."""
    with open("/proc/self/smaps") as smaps:
        lines = smaps.read().splitlines()
    for index, line in enumerate(lines):
        if line.endswith(" " + path):
            for flags in lines[index + 1 :]:
                if flags.startswith("VmFlags:"):
                    return set(flags.split()[1:])
    raise AssertionError(f"{path} is not mapped")


def test_without_read_ahead_the_commit_log_is_read_randomly(store_factory: StoreFactory) -> None:
    store = store_factory(data_read_ahead_enable=False)
    _put(store, 1)
    first = store.commit_log.mapped_file_queue.mapped_files[0]
    assert "rr" in _vm_flags(first.file_name)  # MADV_RANDOM: VM_RAND_READ
    store.commit_log.mapped_file_queue.set_read_mode(mmap.MADV_NORMAL)
    assert "rr" not in _vm_flags(first.file_name)
    store.commit_log.mapped_file_queue.set_read_mode(mmap.MADV_RANDOM)
    # A file created from now on is advised too (the small test files roll at 256 KiB).
    _put(store, 300)
    files = store.commit_log.mapped_file_queue.mapped_files
    assert len(files) > 1
    assert "rr" in _vm_flags(files[-1].file_name)


def test_a_reloaded_commit_log_keeps_the_read_mode(
    store_factory: StoreFactory, tmp_path: Path
) -> None:
    store = store_factory(tmp_path / "s")
    _put(store, 1)
    path = store.commit_log.mapped_file_queue.mapped_files[0].file_name
    assert "rr" not in _vm_flags(path)
    store.shutdown()
    reopened = store_factory(tmp_path / "s", data_read_ahead_enable=False)
    assert "rr" in _vm_flags(reopened.commit_log.mapped_file_queue.mapped_files[0].file_name)
