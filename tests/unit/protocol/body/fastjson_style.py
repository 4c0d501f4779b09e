"""A test-side writer of JSON in fastjson's style: integer-like map keys unquoted, object keys
written as the object itself, optional whitespace and escapes that standard writers avoid."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

_INT_KEY = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class ObjectKey:
    """A map key that fastjson writes as an object (a MessageQueue key, say)."""

    canonical: str
    value: dict[str, Any] = field(compare=False)

    @classmethod
    def of(cls, value: dict[str, Any]) -> ObjectKey:
        return cls(orjson.dumps(value).decode(), value)


def _string(text: str, rnd: random.Random | None) -> str:
    if rnd is None:
        return orjson.dumps(text).decode()
    out = ['"']
    for ch in text:
        roll = rnd.random()
        if ch == "/" and roll < 0.5:
            out.append("\\/")
        elif roll < 0.2 and ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(orjson.dumps(ch).decode()[1:-1])
    out.append('"')
    return "".join(out)


def fastjson_dumps(value: Any, rnd: random.Random | None = None) -> str:
    """``value`` as fastjson would write it; with ``rnd``, also random whitespace and escapes."""

    def space() -> str:
        return rnd.choice(["", "", " ", "\n\t", "\r\n  "]) if rnd else ""

    def key(k: str | ObjectKey) -> str:
        if isinstance(k, ObjectKey):
            return fastjson_dumps(k.value, rnd)
        if _INT_KEY.fullmatch(k):
            return k
        return _string(k, rnd)

    if isinstance(value, dict):
        members = [
            f"{space()}{key(k)}{space()}:{space()}{fastjson_dumps(v, rnd)}{space()}"
            for k, v in value.items()
        ]
        return "{" + ",".join(members) + "}"
    if isinstance(value, list):
        return "[" + ",".join(space() + fastjson_dumps(v, rnd) + space() for v in value) + "]"
    if isinstance(value, str):
        return _string(value, rnd)
    return orjson.dumps(value).decode()


def as_parsed(value: Any) -> Any:
    """What a parse of ``fastjson_dumps(value)`` gives: object keys as JSON strings."""
    if isinstance(value, dict):
        return {
            (k.canonical if isinstance(k, ObjectKey) else k): as_parsed(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [as_parsed(v) for v in value]
    return value


def same_value(parsed: Any, value: Any) -> bool:
    """Whether ``parsed`` is ``value`` read back, an object key matching by its JSON."""
    if isinstance(value, dict):
        if not isinstance(parsed, dict) or len(parsed) != len(value):
            return False
        for (pk, pv), (k, v) in zip(parsed.items(), value.items(), strict=True):
            if isinstance(k, ObjectKey):
                if not same_value(orjson.loads(pk), k.value):
                    return False
            elif pk != k:
                return False
            if not same_value(pv, v):
                return False
        return True
    if isinstance(value, list):
        return (
            isinstance(parsed, list)
            and len(parsed) == len(value)
            and all(same_value(p, v) for p, v in zip(parsed, value, strict=True))
        )
    return bool(parsed == value)
