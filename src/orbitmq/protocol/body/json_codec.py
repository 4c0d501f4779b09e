"""Typed bodies: dataclasses read from and written to RocketMQ's body JSON.

One mechanism for every body. A dataclass field ``broker_addrs`` is the JSON member
``brokerAddrs`` (snake_case to camelCase); a field whose RocketMQ name does not follow that rule
says so in its metadata (``field(metadata=json_name("clientID"))``). The codec for a class is
built from its type hints on first use and cached, so each later read or write is a walk over
prepared converters.

Reading follows fastjson's habits, because real clients rely on them: a missing or null member
takes the field's default (RocketMQ's), unknown members are ignored, an enum arrives by name or
by ordinal (the C++ client sends ``"consumeType":1``), a number may arrive as a string (the C++
client sends ``"subVersion":"1795259195633"``), map keys that are ints or MessageQueues arrive as
strings (see ``json_text``). Anything else of the wrong type raises :class:`BodyError` naming
the path. Writing is standard JSON: members sorted by name as fastjson sorts them, None left
out as fastjson leaves out null, sets sorted, enums by name, non-string map keys as strings.
"""

from __future__ import annotations

import dataclasses
import enum
import types
from collections.abc import Callable
from typing import Any, Final, Self, Union, cast, get_args, get_origin, get_type_hints

import orjson

from orbitmq.protocol.body.errors import BodyError
from orbitmq.protocol.body.json_scalars import (
    decode_bool,
    decode_float,
    decode_int,
    decode_str,
    fail,
    same,
)
from orbitmq.protocol.body.json_text import dumps_body, loads_body

#: The field-metadata key that gives a field's JSON member name.
JSON_NAME: Final = "json_name"

Decode = Callable[[Any], Any]
Encode = Callable[[Any], Any]


def json_name(name: str) -> dict[str, str]:
    """Field metadata naming the JSON member when camelCase of the attribute is not it."""
    return {JSON_NAME: name}


def camel_case(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclasses.dataclass(frozen=True, slots=True)
class _Codec:
    decode: Decode
    encode: Encode
    #: Builds the value a missing member takes when the field has no default of its own.
    zero: Callable[[], Any] | None = None


_CODECS: dict[object, _Codec] = {}


def codec_for(tp: object) -> _Codec:
    """The (cached) converters for a type used in a body."""
    codec = _CODECS.get(tp)
    if codec is None:
        codec = _build(tp)
        _CODECS[tp] = codec
    return codec


_SCALARS: Final[dict[object, _Codec]] = {
    int: _Codec(decode_int, same, int),
    float: _Codec(decode_float, same, float),
    bool: _Codec(decode_bool, same, bool),
    str: _Codec(decode_str, same, str),
    Any: _Codec(same, same),
}


def _build(tp: object) -> _Codec:
    scalar = _SCALARS.get(tp)
    if scalar is not None:
        return scalar
    origin, args = get_origin(tp), get_args(tp)
    if origin is Union or origin is types.UnionType:
        return _optional_codec(tp, args)
    if origin is list:
        return _list_codec(codec_for(args[0]), list)
    if origin is set or origin is frozenset:
        return _list_codec(codec_for(args[0]), origin)
    if origin is dict:
        return _dict_codec(args[0], codec_for(args[1]))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_codec(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _dataclass_codec(tp)
    raise TypeError(f"no body codec for type {tp!r}")


def _optional_codec(tp: object, args: tuple[Any, ...]) -> _Codec:
    present = [arg for arg in args if arg is not type(None)]
    if len(present) != 1 or len(args) != 2:
        raise TypeError(f"no body codec for type {tp!r}: only X | None unions are supported")
    inner = codec_for(present[0])

    def decode(value: Any) -> Any:
        return None if value is None else inner.decode(value)

    def encode(value: Any) -> Any:
        return None if value is None else inner.encode(value)

    return _Codec(decode, encode, lambda: None)


def _list_codec(item: _Codec, container: Callable[[Any], Any]) -> _Codec:
    is_set = container is not list
    item_decode, item_encode = item.decode, item.encode

    def decode(value: Any) -> Any:
        if not isinstance(value, list):
            raise fail("a list", value)
        items = []
        for i, v in enumerate(value):
            try:
                items.append(item_decode(v))
            except BodyError as exc:
                raise exc.within(f"[{i}]") from None
        return container(items)

    def encode(value: Any) -> Any:
        if is_set:
            try:
                value = sorted(value)
            except TypeError:
                value = list(value)
        return [item_encode(v) for v in value]

    return _Codec(decode, encode, lambda: container(()))


def _key_codec(tp: object) -> _Codec:
    """Map keys: JSON keys are strings; RocketMQ's may be ints, enums or MessageQueues."""
    if tp is str:
        return _Codec(same, same)
    if tp is int:
        return _Codec(decode_int, str)
    value_codec = codec_for(tp)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return value_codec
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        # fastjson writes an object key as the object itself; we read and write it as a
        # string holding that object's JSON, which fastjson also reads.
        def decode(key: Any) -> Any:
            try:
                parsed = orjson.loads(key)
            except orjson.JSONDecodeError:
                raise fail(f"a {tp.__name__} as JSON", key) from None
            return value_codec.decode(parsed)

        def encode(key: Any) -> str:
            return orjson.dumps(value_codec.encode(key)).decode()

        return _Codec(decode, encode)
    raise TypeError(f"no body codec for map keys of type {tp!r}")


def _dict_codec(key_type: object, value: _Codec) -> _Codec:
    key = _key_codec(key_type)
    key_decode, key_encode = key.decode, key.encode
    value_decode, value_encode = value.decode, value.encode

    def decode(raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise fail("an object", raw)
        result = {}
        for k, v in raw.items():
            try:
                result[key_decode(k)] = value_decode(v)
            except BodyError as exc:
                raise exc.within(f"[{orjson.dumps(k).decode()}]") from None
        return result

    def encode(table: Any) -> Any:
        return {key_encode(k): value_encode(v) for k, v in table.items()}

    return _Codec(decode, encode, dict)


def _enum_codec(cls: type[enum.Enum]) -> _Codec:
    """By name, or by ordinal (declaration order, as Java numbers them)."""
    members = list(cls)
    names = ", ".join(cls.__members__)

    def decode(value: Any) -> Any:
        if isinstance(value, str):
            member = cls.__members__.get(value)
            if member is not None:
                return member
        elif type(value) is int and 0 <= value < len(members):
            return members[value]
        raise fail(f"a {cls.__name__} ({names}, or its ordinal)", value)

    return _Codec(decode, lambda member: member.name)


@dataclasses.dataclass(frozen=True, slots=True)
class _Member:
    attr: str
    name: str
    codec: _Codec
    #: None when the dataclass field has a default of its own.
    zero: Callable[[], Any] | None


def _members(cls: type) -> list[_Member]:
    hints = get_type_hints(cls)
    members = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        codec = codec_for(hints[f.name])
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        zero = None if has_default else codec.zero
        if zero is None and not has_default:
            raise TypeError(f"{cls.__name__}.{f.name} needs a default to be read from a body")
        members.append(
            _Member(f.name, f.metadata.get(JSON_NAME) or camel_case(f.name), codec, zero)
        )
    return sorted(members, key=lambda m: m.name)


def _dataclass_codec(cls: type) -> _Codec:
    members = _members(cls)
    label = cls.__name__

    def decode(raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise fail(f"a {label} object", raw)
        kwargs = {}
        for m in members:
            value = raw.get(m.name)
            if value is not None:
                try:
                    kwargs[m.attr] = m.codec.decode(value)
                except BodyError as exc:
                    raise exc.within(m.name) from None
            elif m.zero is not None:
                kwargs[m.attr] = m.zero()
        return cls(**kwargs)

    def encode(obj: Any) -> Any:
        out = {}
        for m in members:
            value = getattr(obj, m.attr)
            if value is not None:
                out[m.name] = m.codec.encode(value)
        return out

    return _Codec(decode, encode)


class Body:
    """Base of the typed bodies (each a dataclass): ``from_json`` and ``to_json``.

    Bodies are plain data, owned by one task at a time.
    """

    __slots__ = ()

    @classmethod
    def from_json(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Read a body: standard JSON or fastjson's; raises :class:`BodyError`."""
        return cls.from_value(loads_body(data))

    @classmethod
    def from_value(cls, value: Any) -> Self:
        """Build from already parsed JSON (dicts, lists, strings, numbers)."""
        try:
            return cast(Self, codec_for(cls).decode(value))
        except BodyError as exc:
            raise exc.within(cls.__name__) from None

    def to_value(self) -> dict[str, Any]:
        """The JSON object as Python values: string keys, enums by name, sets as lists."""
        return cast(dict[str, Any], codec_for(type(self)).encode(self))

    def to_json(self) -> bytes:
        """Standard JSON, compact, members in fastjson's (alphabetical) order."""
        return dumps_body(self.to_value())
