"""Binding RocketMQ's camelCase config keys (broker.conf) onto snake_case dataclasses.

RocketMQ sets any field whose setter matches a key (``MixAll.properties2Object``); here a
key ``mappedFileSizeCommitLog`` sets the field ``mapped_file_size_commit_log`` of the first
target that has it, converted to the field's type. A value that does not convert is a
ConfigError naming the key, the value and the expected type; keys no target has are
returned so the caller can warn about them.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from orbitmq.common.errors import ConfigError

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_case(key: str) -> str:
    """``mappedFileSizeCommitLog`` -> ``mapped_file_size_commit_log``; ``brokerIP1`` ->
    ``broker_ip1``; ``checkCRCOnRecover`` -> ``check_crc_on_recover``."""
    return _CAMEL_BOUNDARY.sub("_", key).lower()


def _convert(key: str, raw: str, kind: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin is typing.Union or origin is types.UnionType:
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        if raw == "" and len(options) < len(typing.get_args(kind)):
            return None
        return _convert(key, raw, options[0])
    value = raw.strip()
    try:
        if kind is bool:
            lowered = value.lower()
            if lowered not in ("true", "false"):
                raise ValueError(value)
            return lowered == "true"
        if kind is int:
            return int(value)
        if kind is float:
            return float(value)
        if isinstance(kind, type) and issubclass(kind, enum.Enum):
            return kind[value.upper()]
        if kind is str:
            return raw
    except (ValueError, KeyError) as exc:
        expected = (
            " or ".join(member.name for member in kind)
            if isinstance(kind, type) and issubclass(kind, enum.Enum)
            else getattr(kind, "__name__", str(kind))
        )
        raise ConfigError(f"{key}: {raw!r} is not a valid {expected}") from exc
    raise ConfigError(f"{key}: fields of type {kind} cannot be set from a config file")


def bind_properties(properties: Mapping[str, str], targets: Sequence[Any]) -> list[str]:
    """Set every key on the first target dataclass with that field; the unknown keys."""
    tables = []
    for target in targets:
        hints = typing.get_type_hints(type(target))
        tables.append((target, {f.name: hints[f.name] for f in dataclasses.fields(target)}))
    unknown = []
    for key, raw in properties.items():
        name = snake_case(key)
        for target, fields in tables:
            if name in fields:
                setattr(target, name, _convert(key, raw, fields[name]))
                break
        else:
            unknown.append(key)
    return unknown


def camel_case(name: str) -> str:
    """``listen_port`` -> ``listenPort``: a field's RocketMQ key (initialisms such as
    ``brokerIP1`` are not recovered)."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def config_properties(targets: Sequence[Any]) -> dict[str, str]:
    """The scalar fields of the ``targets`` dataclasses as RocketMQ's keys and texts
    (``MixAll.object2Properties``): booleans ``true``/``false``, enums by name; None and
    fields of other types are left out."""
    properties: dict[str, str] = {}
    for target in targets:
        for f in dataclasses.fields(target):
            value = getattr(target, f.name)
            if isinstance(value, bool):
                text = "true" if value else "false"
            elif isinstance(value, enum.Enum):
                text = value.name
            elif isinstance(value, int | float | str):
                text = str(value)
            else:
                continue
            properties.setdefault(camel_case(f.name), text)
    return properties
