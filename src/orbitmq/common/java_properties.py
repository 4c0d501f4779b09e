"""Java's ``.properties`` text format, as RocketMQ reads broker.conf and namesrv.conf."""

from __future__ import annotations

from typing import Final

_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[str]:
    """Physical lines joined where a line ends in an odd number of backslashes."""
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = raw.lstrip() if pending else raw
        if not pending and line.lstrip()[:1] in ("#", "!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending += line[:-1]
            continue
        lines.append(pending + line)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\" or i + 1 == len(text):
            out.append(char)
            i += 1
            continue
        code = text[i + 1]
        if code == "u" and i + 6 <= len(text):
            out.append(chr(int(text[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(code, code))
        i += 2
    return "".join(out)


def _split(line: str) -> tuple[str, str]:
    """Key and value: the key ends at an unescaped '=', ':' or whitespace."""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\":
            i += 2
            continue
        if char in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str) -> dict[str, str]:
    """The key/value pairs of a properties file; later keys win, as in Java."""
    properties: dict[str, str] = {}
    for line in _logical_lines(text):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        key, value = _split(line.lstrip())
        properties[key] = value
    return properties


def _escape(text: str, *, key: bool) -> str:
    out = []
    for i, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(char)])
        elif char in "=:#!" or (char == " " and (key or i == 0)):
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def format_properties(properties: dict[str, str]) -> str:
    """``key=value`` lines, in the given order, escaped so ``parse_properties`` (and Java's
    Properties.load) reads back exactly these pairs."""
    return "".join(
        f"{_escape(k, key=True)}={_escape(v, key=False)}\n" for k, v in properties.items()
    )
