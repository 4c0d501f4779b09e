"""A message's body as text, hex and JSON, and its trace as timeline bars."""

from __future__ import annotations

from orbitmq.client.trace import MessageTrace
from orbitmq.client.trace.message_trace import PubTraceRow, SubTraceRow
from orbitmq.console.message_view import HEX_LIMIT, body_views, timeline


def test_body_views() -> None:
    views = body_views(b'{"a": [1, 2]}')
    assert views.text == '{"a": [1, 2]}'
    assert views.hex.startswith("7b 22 61 22")
    assert views.json == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    binary = body_views(b"\xff\x00" * HEX_LIMIT)
    assert binary.json is None
    assert binary.text.startswith("\ufffd")
    assert binary.hex.endswith(f"... ({HEX_LIMIT} more bytes)")


def pub(at_ms: int, cost_ms: int) -> PubTraceRow:
    return PubTraceRow(
        "pg",
        "10.0.0.1",
        at_ms,
        cost_ms,
        True,
        "T",
        None,
        None,
        "10.0.0.2:10911",
        "X",
        "Normal_Msg",
        "DefaultRegion",
    )


def sub(at_ms: int, cost_ms: int, success: bool) -> SubTraceRow:
    return SubTraceRow("cg", "10.0.0.3", at_ms, cost_ms, success, 0, 0, "r1")


def test_timeline_places_each_event_by_its_start_and_cost() -> None:
    trace = MessageTrace("ID", [pub(1000, 20)], [sub(1080, 20, False), sub(1020, 10, True)], [])
    bars = timeline(trace)
    assert [(b.kind, b.start_ms) for b in bars] == [
        ("send", 1000),
        ("consume", 1020),
        ("consume", 1080),
    ]
    assert [b.left_pct for b in bars] == [0.0, 20.0, 80.0]
    assert [b.width_pct for b in bars] == [20.0, 10.0, 20.0]
    assert [b.success for b in bars] == [True, True, False]
    assert timeline(MessageTrace("ID", [], [], [])) == []
