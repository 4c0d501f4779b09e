"""CommandHeader: a typed view of a remoting command's extFields (RocketMQ's
CommandCustomHeader).

A header class lists its fields once; each names its extFields key::

    class GetRouteInfoRequestHeader(CommandHeader):
        topic: str = ext_field("topic")
        accept_standard_json_only: bool | None = ext_field("acceptStandardJsonOnly", default=None)

Subclasses become frozen, keyword-only dataclasses. A field without a default is required
(RocketMQ's ``@CFNotNull``); the others take their default when the key is absent. Field
types are ``str``, ``bool``, ``int`` (Java's long) and ``Int32`` (Java's int), optionally
``| None``.

On the wire every value is a string: integers in decimal, booleans ``true`` / ``false``.
Parsing is strict about shape and range (Java's ``parseInt`` / ``parseLong``: ASCII digits
with an optional sign) and accepts both boolean spellings real clients send: ``true`` /
``false`` (Java, any case) and ``1`` / ``0`` (the C++ clients). Keys a header does not know
(AccessKey, Signature, OnsChannel, ...) are ignored.

SEND and PULL headers are parsed on every request, so each class's field table is built once,
when the class is defined; parsing is one loop over it.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Final, NamedTuple, Self, TypeVar, overload

from orbitmq.protocol.header.errors import HeaderError

_T = TypeVar("_T")

#: Java's ``int`` / ``Integer``: a field that holds 32 bits. Plain ``int`` is Java's ``long``.
Int32 = Annotated[int, "java int"]

_KEY: Final = "orbitmq.ext_key"
_NAME: Final = "orbitmq.ext_name"
_BOOLEANS: Final = {"true": True, "false": False, "1": True, "0": False}


@overload
def ext_field(key: str, *, label: str | None = None) -> Any: ...
@overload
def ext_field(key: str, *, default: _T, label: str | None = None) -> _T: ...
def ext_field(key: str, *, default: Any = dataclasses.MISSING, label: str | None = None) -> Any:
    """A header field stored under extFields ``key``; required unless it has a default.

    ``label`` explains a cryptic key in error messages (``e (queueId): ...``).
    """
    name = key if label is None else f"{key} ({label})"
    return dataclasses.field(default=default, metadata={_KEY: key, _NAME: name})


def _parse_integer(name: str, text: str, bits: int) -> int:
    """Java's parseInt (32 bits) or parseLong (64 bits), ASCII digits only."""
    digits = text[1:] if text[:1] in ("-", "+") else text
    if not (digits.isascii() and digits.isdigit()):
        raise HeaderError(name, text, "is not an integer")
    high = (1 << (bits - 1)) - 1
    try:
        value = int(text)
    except ValueError:  # more digits than int() converts: far out of range anyway
        value = high + 1
    if not -high - 1 <= value <= high:
        raise HeaderError(name, text, f"is outside the {bits}-bit range [{-high - 1}, {high}]")
    return value


def _parse_bool(name: str, text: str) -> bool:
    value = _BOOLEANS.get(text.lower())
    if value is None:
        raise HeaderError(name, text, "is not a boolean (true or false)")
    return value


class _Kind(enum.Enum):
    STR = "str"
    BOOL = "bool"
    INT = "int"


_STR: Final = _Kind.STR
_BOOL: Final = _Kind.BOOL
_INT: Final = _Kind.INT
#: Annotation -> kind and, for integers, bits.
_KINDS: Final[dict[object, tuple[_Kind, int]]] = {
    str: (_STR, 0),
    bool: (_BOOL, 0),
    int: (_INT, 64),
    Int32: (_INT, 32),
}
#: Up to this many plain digits an integer of so many bits cannot be out of range.
_SAFE_DIGITS: Final = {0: 0, 32: 9, 64: 18}


class _Slot(NamedTuple):
    """One field of a header class, as parsing and writing need it."""

    attr: str
    key: str
    #: The key as error messages show it.
    name: str
    kind: _Kind
    required: bool
    bits: int
    safe_digits: int


def _kind_of(owner: str, hint: object) -> tuple[_Kind, int, bool]:
    """The kind of a field's annotation, its bits, and whether it admits None."""
    args: tuple[object, ...] = (hint,)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
    kinds = [_KINDS.get(arg) for arg in args if arg is not types.NoneType]
    if len(kinds) != 1 or kinds[0] is None:
        raise TypeError(f"{owner} is {hint}: header fields are str, bool, int or Int32")
    kind, bits = kinds[0]
    return kind, bits, len(args) > 1


def _slots_of(cls: type[CommandHeader]) -> tuple[tuple[_Slot, ...], dict[str, Any]]:
    """The class's field table and the defaults of its optional fields."""
    hints = typing.get_type_hints(cls, include_extras=True)
    slots = []
    defaults = {}
    for field in dataclasses.fields(typing.cast(Any, cls)):
        owner = f"{cls.__name__}.{field.name}"
        key = field.metadata.get(_KEY)
        if key is None:
            raise TypeError(f"{owner} needs ext_field(<extFields key>)")
        kind, bits, optional = _kind_of(owner, hints[field.name])
        required = field.default is dataclasses.MISSING
        if required and optional:
            raise TypeError(f"{owner} is optional and has no default")
        if not required:
            defaults[field.name] = field.default
        name = field.metadata[_NAME]
        slots.append(_Slot(field.name, key, name, kind, required, bits, _SAFE_DIGITS[bits]))
    return tuple(slots), defaults


@typing.dataclass_transform(
    frozen_default=True, kw_only_default=True, field_specifiers=(ext_field,)
)
class CommandHeader:
    """Base of every typed request and response header.

    Instances are frozen values, safe to share between tasks and threads.
    """

    _slots: ClassVar[tuple[_Slot, ...]] = ()
    _defaults: ClassVar[dict[str, Any]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__post_init__" in vars(cls):
            # from_ext_fields fills instances without __init__; rules go in check().
            raise TypeError(f"{cls.__name__}: put checks in check(), not __post_init__")
        dataclasses.dataclass(frozen=True, kw_only=True)(cls)
        cls._slots, cls._defaults = _slots_of(cls)

    @classmethod
    def from_ext_fields(cls, ext: Mapping[str, str]) -> Self:
        """The header held in ``ext``; raises HeaderError naming the key, value and why."""
        values = dict(cls._defaults)
        for attr, key, name, kind, required, bits, safe_digits in cls._slots:
            text = ext.get(key)
            if text is None:
                if required:
                    raise HeaderError(name, None, "is required")
            elif kind is _STR:
                values[attr] = text
            elif kind is _INT:
                # The common case, a short unsigned number, without a call.
                if len(text) <= safe_digits and text.isdigit() and text.isascii():
                    values[attr] = int(text)
                else:
                    values[attr] = _parse_integer(name, text, bits)
            else:
                flag = _BOOLEANS.get(text)
                values[attr] = _parse_bool(name, text) if flag is None else flag
        header = cls._filled(values)
        header.check()
        return header

    @classmethod
    def _filled(cls, values: dict[str, Any]) -> Self:
        """An instance from a value for every field, without __init__'s setattr per field
        (this runs for every SEND and PULL). The caller vouches for names and types."""
        header = object.__new__(cls)
        header.__dict__.update(values)
        return header

    def to_ext_fields(self) -> dict[str, str]:
        """extFields for the wire: every field that is not None, as RocketMQ writes them."""
        ext: dict[str, str] = {}
        for attr, key, _, kind, _, _, _ in self._slots:
            value = getattr(self, attr)
            if value is None:
                continue
            if kind is _STR:
                ext[key] = value
            elif kind is _BOOL:
                ext[key] = "true" if value else "false"
            else:
                ext[key] = str(value)
        return ext

    @classmethod
    def ext_keys(cls) -> dict[str, str]:
        """Attribute name -> extFields key, in declaration order."""
        return {slot.attr: slot.key for slot in cls._slots}

    def check(self) -> None:
        """RocketMQ's checkFields: rules across values, run after parsing. Raises HeaderError."""
