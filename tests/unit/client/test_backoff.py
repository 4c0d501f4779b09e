"""Flow-control backoff: 1 s growing by 1.6 up to 120 s, with ±20 % jitter."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.client import Backoff


def no_jitter() -> Backoff:
    return Backoff(jitter=0.0)


def test_sequence_without_jitter_grows_by_1_6_up_to_120_seconds() -> None:
    backoff = no_jitter()
    delays = [backoff.next_delay() for _ in range(14)]
    expected = [1.0, 1.6, 2.56, 4.096, 6.5536, 10.48576, 16.777216, 26.8435456, 42.94967296]
    assert delays[:9] == pytest.approx(expected)
    # 1.6**10 = 109.95 is the last uncapped step; 1.6**11 = 175.9 is capped.
    assert delays[10] == pytest.approx(1.6**10)
    assert delays[11:] == [120.0, 120.0, 120.0]


def test_reset_starts_over() -> None:
    backoff = no_jitter()
    for _ in range(5):
        backoff.next_delay()
    backoff.reset()
    assert backoff.next_delay() == 1.0
    assert backoff.next_delay() == pytest.approx(1.6)


def test_the_random_source_spreads_around_the_current_backoff() -> None:
    calls: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        calls.append((low, high))
        return high

    backoff = Backoff(uniform=uniform)
    assert backoff.next_delay() == pytest.approx(1.2)
    assert backoff.next_delay() == pytest.approx(1.6 * 1.2)
    assert calls == [pytest.approx((-0.2, 0.2)), pytest.approx((-0.32, 0.32))]


@given(seed=st.integers(0, 2**32), steps=st.integers(1, 30))
def test_jitter_stays_within_20_percent(seed: int, steps: int) -> None:
    jittered = Backoff(uniform=random.Random(seed).uniform)
    plain = no_jitter()
    for _ in range(steps):
        base = plain.next_delay()
        delay = jittered.next_delay()
        assert base * 0.8 <= delay <= base * 1.2


def test_a_seeded_source_is_reproducible() -> None:
    first = Backoff(uniform=random.Random(7).uniform)
    second = Backoff(uniform=random.Random(7).uniform)
    assert [first.next_delay() for _ in range(10)] == [second.next_delay() for _ in range(10)]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"initial_backoff_s": 0.0}, "initial_backoff_s"),
        ({"multiplier": 0.5}, "multiplier"),
        ({"jitter": 1.0}, "jitter"),
        ({"jitter": -0.1}, "jitter"),
        ({"max_backoff_s": 0.5}, "max_backoff_s"),
    ],
)
def test_bad_settings_name_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        Backoff(uniform=random.uniform, **kwargs)
