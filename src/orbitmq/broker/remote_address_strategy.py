"""Which peer addresses a plain ACL address pattern admits (RocketMQ 4.9.8's
``RemoteAddressStrategyFactory``): ``globalWhiteRemoteAddresses`` and an account's
``whiteRemoteAddress``.

Patterns: blank admits nobody; ``*``, ``*.*.*.*`` (or the IPv6 form) everybody; one address
(IPv4 or IPv6); a list ``a,b,c``; a last part in braces ``192.168.1.{1,2,3}``; a range or a
wildcard in the 2nd, 3rd or 4th part of an IPv4 address, ``192.168.0.*``, ``192.168.1-10.*``,
``10.*`` (the first such part decides; the parts after it are not looked at, as in RocketMQ).
IPv6 ranges are not supported (refused when the file loads).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final, Protocol

from orbitmq.common.errors import ConfigError

_EVERYBODY: Final = frozenset({"*", "*.*.*.*", "*:*:*:*:*:*:*:*"})


class RemoteAddressStrategy(Protocol):
    """Tells whether a peer's host (no port) is admitted. Immutable: safe from any task."""

    def match(self, host: str) -> bool: ...


def _canonical(address: str) -> str | None:
    """An IPv4 address as written, an IPv6 one in its one full form; None if neither."""
    try:
        parsed = ipaddress.ip_address(address.strip())
    except ValueError:
        return None
    return parsed.exploded.upper() if parsed.version == 6 else str(parsed)


@dataclass(frozen=True, slots=True)
class _Fixed:
    admits: bool

    def match(self, host: str) -> bool:
        return self.admits


@dataclass(frozen=True, slots=True)
class _Multiple:
    addresses: frozenset[str]

    def match(self, host: str) -> bool:
        return _canonical(host) in self.addresses


@dataclass(frozen=True, slots=True)
class _Range:
    head: str
    index: int
    start: int
    end: int

    def match(self, host: str) -> bool:
        parts = host.split(".")
        if len(parts) != 4 or not host.startswith(self.head):
            return False
        value = parts[self.index]
        return value.isdigit() and self.start <= int(value) <= self.end


def _multiple(pattern: str, addresses: list[str]) -> _Multiple:
    canonical = set()
    for address in addresses:
        one = _canonical(address)
        if one is None:
            raise ConfigError(f"plain ACL: address {address!r} in {pattern!r} is not an IP")
        canonical.add(one)
    return _Multiple(frozenset(canonical))


def _range(pattern: str) -> _Range:
    if ":" in pattern:
        raise ConfigError(f"plain ACL: IPv6 address ranges are not supported: {pattern!r}")
    parts = [part.strip() for part in pattern.split(".")]
    for index in range(1, min(len(parts), 4)):
        value = parts[index]
        if value == "*":
            start, end = 0, 255
        elif "-" in value and not value.startswith("-"):
            low, _, high = value.partition("-")
            if not (low.isdigit() and high.isdigit()):
                break
            start, end = int(low), int(high)
            if not 0 <= start <= end <= 255:
                raise ConfigError(f"plain ACL: range {value!r} in {pattern!r} is not in 0..255")
        else:
            continue
        head = parts[:index]
        if not all(part.isdigit() and int(part) <= 255 for part in head):
            break
        return _Range(".".join(head) + ".", index, start, end)
    raise ConfigError(f"plain ACL: address pattern {pattern!r} is not understood")


def remote_address_strategy(pattern: str | None) -> RemoteAddressStrategy:
    """The strategy for ``pattern``; ConfigError names a pattern that is not one."""
    if pattern is None or not pattern.strip():
        return _Fixed(False)
    pattern = pattern.strip()
    if pattern in _EVERYBODY:
        return _Fixed(True)
    if pattern.endswith("}"):
        prefix, brace, choices = pattern.rpartition("{")
        if not brace or not prefix.endswith((".", ":")):
            raise ConfigError(f"plain ACL: address pattern {pattern!r} is not understood")
        return _multiple(pattern, [prefix + one for one in choices[:-1].split(",") if one])
    if "," in pattern:
        return _multiple(pattern, [one for one in pattern.split(",") if one])
    if "*" in pattern or "-" in pattern:
        return _range(pattern)
    return _multiple(pattern, [pattern])
