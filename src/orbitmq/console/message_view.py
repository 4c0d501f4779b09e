"""How a message shows on its page: the body as text, hex and JSON, and its trace as a
timeline (each send and each consume a bar placed by its start time and length)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from orbitmq.client.trace import MessageTrace

#: Bytes of a body shown as hex; the rest is counted, not shown.
HEX_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class BodyViews:
    text: str
    hex: str
    json: str | None


def body_views(body: bytes) -> BodyViews:
    text = body.decode("utf-8", errors="replace")
    shown = body[:HEX_LIMIT].hex(" ")
    if len(body) > HEX_LIMIT:
        shown += f" ... ({len(body) - HEX_LIMIT} more bytes)"
    try:
        pretty: str | None = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        pretty = None
    return BodyViews(text, shown, pretty)


@dataclass(frozen=True, slots=True)
class TimelineBar:
    """One trace event: what and who, when (ms), how long, and where its bar sits in the
    timeline (percent of the whole span)."""

    kind: str
    who: str
    detail: str
    start_ms: int
    cost_ms: int
    success: bool
    left_pct: float
    width_pct: float


def timeline(trace: MessageTrace) -> list[TimelineBar]:
    """The bars of a MessageTrace: Pub rows, then Sub rows, ordered by start time."""
    events: list[tuple[str, str, str, int, int, bool]] = [
        (
            "send",
            p.group,
            f"{p.client_host} → {p.store_host}",
            p.send_time_ms,
            p.cost_time_ms,
            p.success,
        )
        for p in trace.pub
    ]
    events += [
        (
            "consume",
            s.group,
            f"{s.client_host}, retry {s.retry_times}",
            s.consume_time_ms,
            s.cost_time_ms,
            s.success,
        )
        for s in trace.sub
    ]
    events += [
        ("end transaction", e.group, f"{e.transaction_state}", e.time_ms, 0, True)
        for e in trace.end_transaction
    ]
    if not events:
        return []
    events.sort(key=lambda e: e[3])
    begin = events[0][3]
    end = max(e[3] + max(e[4], 0) for e in events)
    span = max(end - begin, 1)
    return [
        TimelineBar(
            kind,
            who,
            detail,
            start,
            cost,
            ok,
            left_pct=100.0 * (start - begin) / span,
            width_pct=max(100.0 * max(cost, 0) / span, 0.5),
        )
        for kind, who, detail, start, cost, ok in events
    ]
