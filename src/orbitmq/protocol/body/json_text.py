"""Body JSON text: read what RocketMQ's fastjson writes, write standard JSON.

fastjson (RocketMQ 4.9's serializer) writes a map whose keys are not strings with the key
unquoted: an Integer or Long key as a bare number (``{"brokerAddrs":{0:"10.0.0.1:10911"}}``,
``consumerOffset.json``'s ``{"topic@group":{0:12,1:7}}``) and an object key as the object itself
(``ConsumeStats``: ``{{"brokerName":"b","queueId":0,"topic":"t"}:{...}}``). Neither is JSON.

:func:`loads_body` tries orjson first, so standard JSON costs one parse. Only when that fails
does it rewrite the text: each key that is not a string becomes a JSON string holding the key's
text (``0`` -> ``"0"``, an object key -> its JSON text as a string), then orjson parses that.
Integer keys alone are quoted by one regex pass; object keys need the token walk of
:func:`fastjson_to_standard`, tried when the quick pass is not enough.
The typed bodies turn such keys back into ints or MessageQueues. We always write standard JSON.
"""

from __future__ import annotations

import re
from typing import Any, Final

import orjson

from orbitmq.protocol.body.errors import BodyError

#: A whole JSON string (escapes included) or one structural character. What lies between two
#: matches is whitespace, a number, true/false/null, or an unquoted key.
_TOKEN: Final = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[{}\[\]:,]')


#: A whole JSON string (kept as it is), or an integer key after "{" or "," (to be quoted).
_STRING_OR_INT_KEY: Final = re.compile(r'("[^"\\]*(?:\\.[^"\\]*)*")|([{,]\s*)(-?[0-9]+)(\s*:)')


def _quote_int_key(match: re.Match[str]) -> str:
    string = match.group(1)
    if string is not None:
        return string
    return f'{match.group(2)}"{match.group(3)}"{match.group(4)}'


def quote_int_keys(text: str) -> str:
    """``text`` with bare integer map keys quoted: the common fastjson case, done in one regex
    pass (twice as fast as :func:`fastjson_to_standard`). Strings are matched whole, so no
    string is changed; object keys are left as they are."""
    return _STRING_OR_INT_KEY.sub(_quote_int_key, text)


class _Level:
    """One open object or array while rewriting."""

    __slots__ = ("is_object", "key_start", "wants_key")

    def __init__(self, is_object: bool, key_start: int) -> None:
        self.is_object = is_object
        # In an object: the next token starts a key (after "{" or ",", until ":").
        self.wants_key = is_object
        # Where this container's text starts in the output when it is itself a map key.
        self.key_start = key_start


def _quote(text: str) -> str:
    return orjson.dumps(text).decode()


def fastjson_to_standard(text: str) -> str:
    """``text`` with every unquoted map key quoted; standard JSON comes back unchanged.

    Strings are matched whole, so digits, colons, braces and escaped quotes inside them are
    never taken for keys. Malformed input stays malformed: the parse after this reports it.
    """
    out: list[str] = []
    levels: list[_Level] = []
    pos = 0
    for match in _TOKEN.finditer(text):
        gap = text[pos : match.start()]
        token = match.group()
        pos = match.end()
        top = levels[-1] if levels else None
        in_key = False
        if top is not None and top.wants_key:
            if token == ":":
                bare = gap.strip()
                if bare:
                    start = gap.index(bare[0])
                    out.append(f"{gap[:start]}{_quote(bare)}{gap[start + len(bare) :]}:")
                else:
                    out.append(f"{gap}:")
                top.wants_key = False
                continue
            in_key = True
        out.append(gap)
        lead = token[0]
        if lead == '"':
            out.append(token)
        elif lead in "{[":
            levels.append(_Level(lead == "{", len(out) if in_key else -1))
            out.append(token)
        elif lead in "}]":
            out.append(token)
            if levels:
                closed = levels.pop()
                if closed.key_start >= 0:
                    key_text = "".join(out[closed.key_start :])
                    del out[closed.key_start :]
                    out.append(_quote(key_text))
        else:  # "," or a ":" outside key position
            out.append(token)
            if token == "," and top is not None and top.is_object:
                top.wants_key = True
    out.append(text[pos:])
    return "".join(out)


def loads_body(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a body written as standard JSON or in fastjson's style.

    Raises :class:`BodyError` when it is neither.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as first:
        try:
            text = data if isinstance(data, str) else bytes(data).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BodyError(f"body is not UTF-8 text: {exc}") from None
        for rewrite in (quote_int_keys, fastjson_to_standard):
            try:
                return orjson.loads(rewrite(text))
            except orjson.JSONDecodeError:
                pass
        raise BodyError(f"body is not JSON: {first}") from None


def dumps_body(value: Any) -> bytes:
    """Standard JSON, compact, UTF-8 (what every RocketMQ client reads)."""
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        raise BodyError(f"cannot write body as JSON: {exc}") from None
