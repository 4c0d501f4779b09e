"""The stream reader's trigger rules, with the brokers' latest offsets given by the test:
maxOffsetsPerTrigger, minOffsetsPerTrigger with maxTriggerDelay, and Trigger.AvailableNow."""

from __future__ import annotations

import time

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

from orbitmq.common import MessageQueue
from orbitmq.spark.options import SourceOptions
from orbitmq.spark.stream_reader import OrbitMQStreamReader

Q0 = MessageQueue("T", "broker-a", 0)
Q1 = MessageQueue("T", "broker-a", 1)


class Clock:
    def __init__(self) -> None:
        self.now_s = 1000.0

    def monotonic(self) -> float:
        return self.now_s


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    # stream_reader reads time.monotonic: the same function, patched where it lives.
    monkeypatch.setattr(time, "monotonic", fake.monotonic)
    return fake


def reader(latest: dict[MessageQueue, int], **options: str) -> OrbitMQStreamReader:
    opts = SourceOptions.parse({"namesrvAddr": "h:1", "topic": "T", **options}, streaming=True)
    made = OrbitMQStreamReader(opts)
    made._latest = lambda: dict(latest)  # type: ignore[method-assign]
    return made


def test_default_read_limit_comes_from_the_options() -> None:
    assert isinstance(reader({}).getDefaultReadLimit(), ReadAllAvailable)
    assert reader({}, maxOffsetsPerTrigger="7").getDefaultReadLimit() == ReadMaxRows(7)
    assert reader({}, minOffsetsPerTrigger="5").getDefaultReadLimit() == ReadMinRows(5)


def test_max_offsets_per_trigger_and_read_all_available(clock: Clock) -> None:
    latest = {Q0: 100, Q1: 20}
    limited = reader(latest, maxOffsetsPerTrigger="30")
    start = {"T": {"broker-a:0": 40, "broker-a:1": 0}}
    assert limited.latestOffset(start, ReadMaxRows(30)) == {
        "T": {"broker-a:0": 63, "broker-a:1": 7}
    }
    # The engine may ask for everything (e.g. to honour a trigger): options are ignored.
    assert limited.latestOffset(start, ReadAllAvailable()) == {
        "T": {"broker-a:0": 100, "broker-a:1": 20}
    }


def test_min_offsets_wait_for_enough_or_for_the_delay(clock: Clock) -> None:
    latest = {Q0: 4}
    waiting = reader(latest, minOffsetsPerTrigger="10", maxTriggerDelay="2s")
    start = {"T": {"broker-a:0": 0}}
    assert waiting.latestOffset(start, ReadMinRows(10)) == start
    clock.now_s += 1.9
    assert waiting.latestOffset(start, ReadMinRows(10)) == start
    clock.now_s += 0.2  # the delay has passed: read what there is
    assert waiting.latestOffset(start, ReadMinRows(10)) == {"T": {"broker-a:0": 4}}
    latest[Q0] = 30  # enough at once
    assert waiting.latestOffset({"T": {"broker-a:0": 4}}, ReadMinRows(10)) == {
        "T": {"broker-a:0": 30}
    }


def test_available_now_stops_at_the_offsets_of_its_start(clock: Clock) -> None:
    latest = {Q0: 50}
    bounded = reader(latest, minOffsetsPerTrigger="1000")
    bounded.prepareForTriggerAvailableNow()
    latest[Q0] = 80  # written after the query started
    latest[Q1] = 5  # a queue added after it started
    start = {"T": {"broker-a:0": 10}}
    # minOffsetsPerTrigger would wait for ever: AvailableNow reads what it found instead.
    assert bounded.latestOffset(start, ReadMinRows(1000)) == {"T": {"broker-a:0": 50}}


def test_a_queue_gone_from_the_route_keeps_its_offset(clock: Clock) -> None:
    assert reader({Q0: 9}).latestOffset(
        {"T": {"broker-a:0": 3, "broker-a:1": 7}}, ReadAllAvailable()
    ) == {"T": {"broker-a:0": 9, "broker-a:1": 7}}
