"""RocketMQ's delay levels ("1s 5s 10s ... 2h"), parsed into milliseconds."""

from __future__ import annotations

from typing import Final

from orbitmq.common.errors import ConfigError

DEFAULT_MESSAGE_DELAY_LEVEL: Final = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_UNIT_MS: Final = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_delay_levels(spec: str = DEFAULT_MESSAGE_DELAY_LEVEL) -> tuple[int, ...]:
    """Parse ``messageDelayLevel`` into the delay of each level in ms; level 1 is index 0."""
    levels: list[int] = []
    for word in spec.split():
        unit = _UNIT_MS.get(word[-1:])
        amount = word[:-1]
        if unit is None or not (amount.isascii() and amount.isdigit()):
            raise ConfigError(
                f"messageDelayLevel: {word!r} in {spec!r} is not a number followed by s, m, h or d"
            )
        levels.append(int(amount) * unit)
    if not levels:
        raise ConfigError("messageDelayLevel: at least one level is required")
    return tuple(levels)


DEFAULT_DELAY_LEVELS_MS: Final = parse_delay_levels()
