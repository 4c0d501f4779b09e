"""The size rules of DESIGN.md, checked on every source module: no module over 600 lines and
no function over 80, so that a merge that grows one past them fails here rather than in a
reviewer's reading."""

from __future__ import annotations

import ast
from pathlib import Path

import orbitmq

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
SRC = Path(orbitmq.__file__).parent


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_the_source_tree_is_found() -> None:
    assert len(_modules()) > 100


def test_no_module_is_over_600_lines() -> None:
    long = {
        str(path.relative_to(SRC)): n
        for path in _modules()
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_is_over_80_lines() -> None:
    long = {}
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(SRC)}:{node.name}"] = lines
    assert long == {}
