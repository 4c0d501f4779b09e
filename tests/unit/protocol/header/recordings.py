"""The conversations recorded between a real RocketMQ 4.9.8 name server / broker and real
clients (../shared/compat), as request / response pairs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.support import compat_recordings


@dataclass(frozen=True)
class Exchange:
    """One recorded request and, when the recording has it, its response."""

    recording: str
    code: int
    #: JAVA or CPP: who wrote the request.
    language: str
    request: dict[str, str]
    response_code: int | None = None
    response: dict[str, str] | None = None


def _as_java_reads(ext: object) -> dict[str, str]:
    """extFields values as the broker reads them: JSON numbers and booleans become text."""
    assert ext is None or isinstance(ext, dict)

    def text(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return {str(k): text(v) for k, v in (ext or {}).items()}


def _exchanges(path: Path) -> list[Exchange]:
    exchanges: list[Exchange] = []
    waiting: dict[tuple[int, int, int], int] = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        header = row["header"]
        conversation = (row["server_port"], row["client_port"], header["opaque"])
        ext = _as_java_reads(header.get("extFields"))
        if header["flag"] & 1:  # a response: pair it with its request
            index = waiting.pop(conversation)
            request = exchanges[index]
            exchanges[index] = Exchange(
                request.recording,
                request.code,
                request.language,
                request.request,
                header["code"],
                ext,
            )
        else:
            if not header["flag"] & 2:  # oneway requests get no response
                waiting[conversation] = len(exchanges)
            exchanges.append(Exchange(path.name, header["code"], header["language"], ext))
    return exchanges


def load_exchanges() -> list[Exchange]:
    recordings = compat_recordings()
    return [exchange for path in recordings for exchange in _exchanges(path)]
