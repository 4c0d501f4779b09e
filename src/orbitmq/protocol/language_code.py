"""The client language a remoting command says it comes from (``LanguageCode``)."""

from __future__ import annotations

import enum


class LanguageCode(enum.IntEnum):
    """Sent by name in JSON headers and as one byte in binary ones."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12

    @classmethod
    def parse(cls, value: object) -> LanguageCode:
        """From a JSON header's name or number; anything unknown is OTHER."""
        known = _BY_NAME.get(value) if isinstance(value, str) else None
        if known is not None:
            return known
        if isinstance(value, str):
            member = cls.__members__.get(value.upper())
            if member is not None:
                return member
            return cls(int(value)) if value.isdigit() and int(value) in _CODES else cls.OTHER
        if isinstance(value, int) and not isinstance(value, bool) and value in _CODES:
            return cls(value)
        return cls.OTHER


_CODES = frozenset(int(member) for member in LanguageCode)
#: The names clients send, exactly as they send them (RocketMQ writes the enum name).
_BY_NAME: dict[str, LanguageCode] = dict(LanguageCode.__members__)
