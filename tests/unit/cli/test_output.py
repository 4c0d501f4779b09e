"""The operator commands' output: JSON for scripts, tables for people, streamed rows."""

from __future__ import annotations

import json

import pytest

from orbitmq.cli.output import Output, jsonable


def test_jsonable_turns_bytes_tuples_and_objects_into_json() -> None:
    value = {"body": b"caf\xc3\xa9\xff", 3: (1, {2}), "x": object}
    assert jsonable(value) == {"body": "café\ufffd", "3": [1, [2]], "x": str(object)}


def test_json_table_is_a_list_of_objects(capsys: pytest.CaptureFixture[str]) -> None:
    Output(as_json=True).table(("topic", "queues"), [("A", 4), ("B", 8)])
    assert json.loads(capsys.readouterr().out) == [
        {"topic": "A", "queues": 4},
        {"topic": "B", "queues": 8},
    ]


def test_a_piped_table_keeps_each_row_on_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    long_value = "x" * 300
    Output(as_json=False).table(("key", "value"), [("k", long_value), ("props", {"a": "1"})])
    lines = capsys.readouterr().out.splitlines()
    assert any(long_value in line for line in lines)
    assert any("a=1" in line for line in lines)


def test_streamed_rows(capsys: pytest.CaptureFixture[str]) -> None:
    table = Output(as_json=False)
    table.stream_row({"msgId": "M1", "body": "one"})
    table.stream_row({"msgId": "M2", "body": "two"})
    assert capsys.readouterr().out.splitlines() == ["msgId\tbody", "M1\tone", "M2\ttwo"]
    lines = Output(as_json=True)
    lines.stream_row({"msgId": "M1", "keys": ["a", "b"]})
    assert json.loads(capsys.readouterr().out) == {"msgId": "M1", "keys": ["a", "b"]}
