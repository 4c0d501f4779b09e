"""messageDelayLevel parsing: RocketMQ's 18 default levels, in milliseconds."""

from __future__ import annotations

import pytest

from orbitmq.common import DEFAULT_DELAY_LEVELS_MS, DEFAULT_MESSAGE_DELAY_LEVEL, parse_delay_levels
from orbitmq.common.errors import ConfigError


def test_default_levels() -> None:
    expected = (
        1000, 5000, 10000, 30000,
        60000, 120000, 180000, 240000, 300000, 360000, 420000, 480000, 540000, 600000,
        1200000, 1800000,
        3600000, 7200000,
    )  # fmt: skip
    assert len(expected) == 18
    assert parse_delay_levels() == expected
    assert expected == DEFAULT_DELAY_LEVELS_MS
    assert DEFAULT_DELAY_LEVELS_MS[0] == 1000
    assert DEFAULT_DELAY_LEVELS_MS[-1] == 7_200_000
    assert DEFAULT_MESSAGE_DELAY_LEVEL == (
        "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    )


def test_custom_levels_and_days() -> None:
    assert parse_delay_levels("2s 1d") == (2000, 86_400_000)
    assert parse_delay_levels("  3m   4h ") == (180_000, 4 * 3_600_000)
    assert parse_delay_levels("0s") == (0,)


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ("1s 5x 10s", "5x"),
        ("1s s", "s"),
        ("10", "10"),
        ("1s -5s", "-5s"),
        ("1.5s", "1.5s"),
        ("1S", "1S"),
        ("1 s", "1"),
        ("²s", "²s"),  # a digit to str.isdigit, but not to int()
    ],
)
def test_bad_words_raise_config_error_naming_the_word(spec: str, word: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_delay_levels(spec)
    assert repr(word) in str(info.value)
    assert "messageDelayLevel" in str(info.value)


@pytest.mark.parametrize("spec", ["", "   "])
def test_no_levels_is_a_config_error(spec: str) -> None:
    with pytest.raises(ConfigError, match="messageDelayLevel"):
        parse_delay_levels(spec)
