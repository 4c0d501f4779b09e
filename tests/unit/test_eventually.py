"""The test waits themselves: eventually returns the first truthy value or names what it
waited for; stays fails the moment its condition breaks."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.eventually import eventually, eventually_async, stays, stays_async


def test_eventually_returns_the_first_truthy_value() -> None:
    values = iter([0, None, "", 7])
    assert eventually(lambda: next(values), interval_s=0) == 7


def test_eventually_names_the_condition_and_its_last_value() -> None:
    with pytest.raises(AssertionError, match=r"lambda: \[\].*its last value: \[\]"):
        eventually(lambda: [], timeout_s=0.05)
    with pytest.raises(AssertionError, match="for the queue to fill; its last value: 0"):
        eventually(lambda: 0, timeout_s=0.05, what="the queue to fill")


def test_stays_fails_the_moment_the_condition_breaks() -> None:
    calls = itertools.count()
    with pytest.raises(AssertionError, match=r"nothing delivered had to hold for 60 s but was"):
        stays(lambda: next(calls) < 3, 60, interval_s=0, what="nothing delivered")


def test_stays_checks_for_the_whole_duration() -> None:
    calls = itertools.count()
    stays(lambda: next(calls) >= 0, 0.1, interval_s=0.01)
    assert next(calls) >= 5


async def test_the_async_twins_take_plain_and_async_conditions() -> None:
    values = itertools.chain([0, 0, 5], itertools.repeat(0))

    async def probe() -> int:
        return next(values)

    assert await eventually_async(probe, interval_s=0) == 5
    assert await eventually_async(lambda: "ready", timeout_s=0) == "ready"
    with pytest.raises(AssertionError, match="probe"):
        await eventually_async(probe, timeout_s=0.05)
    await stays_async(lambda: True, 0.05)
    with pytest.raises(AssertionError, match="was False"):
        await stays_async(lambda: False, 1)


async def test_a_hanging_probe_is_bounded_by_the_timeout() -> None:
    async def hangs() -> bool:
        await asyncio.sleep(60)
        return True

    with pytest.raises(AssertionError, match=r"waited 0.05 s for .*hangs"):
        await eventually_async(hangs, timeout_s=0.05)
