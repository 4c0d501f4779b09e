"""HeaderError: extFields that do not make the header a request or response code needs."""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.errors import ProtocolError

#: Values longer than this are cut short in messages, so an error answer never echoes a
#: megabyte of someone's garbage back to them.
_SHOWN_CHARS: Final = 64


class HeaderError(ProtocolError):
    """A header key that is missing, or a value of the wrong type or out of range.

    The message names RocketMQ's key, the value and why (``queueId: 'abc' is not an
    integer``, ``producerGroup is required``); ``field`` and ``value`` carry the same for code
    that answers the request. Bad input from the network: answered with an error response.
    """

    def __init__(self, field: str, value: str | None, problem: str) -> None:
        self.field = field
        self.value = value
        if value is None:
            super().__init__(f"{field} {problem}")
        else:
            shown = value if len(value) <= _SHOWN_CHARS else value[:_SHOWN_CHARS] + "..."
            super().__init__(f"{field}: {shown!r} {problem}")
