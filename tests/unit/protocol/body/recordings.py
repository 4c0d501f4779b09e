"""Bodies recorded between a real RocketMQ 4.9.8 name server / broker and real clients
(../shared/compat), each paired with the request code it belongs to."""

from __future__ import annotations

import json
from dataclasses import dataclass

from tests.support import compat_recordings

RECORDINGS = compat_recordings()


@dataclass(frozen=True)
class RecordedBody:
    recording: str
    #: The request code, also for responses (found through the request's opaque).
    code: int
    is_response: bool
    ext_fields: dict[str, object]
    body_length: int
    #: What the recording kept: the whole body, or its first 600 characters.
    text: str

    @property
    def whole(self) -> bool:
        return len(self.text.encode()) == self.body_length

    @property
    def client(self) -> str:
        """java, cpp-2.1 (rocketmq-python-cvs 2.1.0.3) or cpp-1.x (rocketmq 0.4.4)."""
        if "java" in self.recording:
            return "java"
        return "cpp-2.1" if "cvs" in self.recording else "cpp-1.x"


def _load() -> list[RecordedBody]:
    bodies = []
    for path in RECORDINGS:
        requests: dict[tuple[int, int, int], int] = {}
        for line in path.read_text().splitlines():
            row = json.loads(line)
            header = row["header"]
            key = (row["server_port"], row["client_port"], header["opaque"])
            is_response = bool(header["flag"] & 1)
            if not is_response:
                requests[key] = header["code"]
            if row["bodyLen"] == 0 or not row["body"]:
                continue
            code = requests[key] if is_response else header["code"]
            bodies.append(
                RecordedBody(
                    path.name,
                    code,
                    is_response,
                    header.get("extFields") or {},
                    row["bodyLen"],
                    row["body"],
                )
            )
    return bodies


BODIES = _load()


def recorded(code: int, *, response: bool) -> list[RecordedBody]:
    return [b for b in BODIES if b.code == code and b.is_response == response]
