"""How the operator commands (``orbitmq admin``, ``send``, ``consume``, ``query``) print
results: rich tables for a person, ``--json`` for scripts (one JSON document on stdout, or one
JSON object per line for commands that stream rows as they arrive), progress bars on stderr
for long runs, and errors as one line on stderr with exit status 1 (see
:func:`orbitmq.cli.console.fail`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Final, Protocol

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from orbitmq.cli.console import err

#: Wide enough that a table piped to a file or a pager is never wrapped into a second line.
_PIPED_WIDTH: Final = 1000


class Advance(Protocol):
    """Moves a progress bar on by one step (or ``steps``)."""

    def __call__(self, steps: int = 1) -> None: ...


def jsonable(value: Any) -> Any:
    """``value`` as JSON can hold it: bytes as UTF-8 text (invalid bytes replaced), tuples and
    sets as lists, other objects as their ``str``."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    return str(value)


class Output:
    """What one command run prints on stdout, as tables or as JSON (``as_json``). Owns no
    state across calls but the streaming header; one command, one thread."""

    def __init__(self, *, as_json: bool) -> None:
        self.as_json = as_json
        terminal = sys.stdout.isatty()
        self._console = Console(
            highlight=False, soft_wrap=False, width=None if terminal else _PIPED_WIDTH
        )
        self._stream_header_done = False

    def table(
        self, columns: Sequence[str], rows: Sequence[Sequence[Any]], *, title: str | None = None
    ) -> None:
        """Rows under ``columns``: a table, or a JSON list of objects keyed by column."""
        if self.as_json:
            self.data([dict(zip(columns, row, strict=True)) for row in rows])
            return
        table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(_cell(v) for v in row))
        with self._console.capture() as captured:
            self._console.print(table)
        # Cells are padded to the column width and the box has blank edges: no line needs
        # its trailing blanks, nor the table its blank first and last lines.
        lines = "\n".join(line.rstrip() for line in captured.get().splitlines())
        self._write(lines.strip("\n"))

    def record(self, fields: Mapping[str, Any], *, title: str | None = None) -> None:
        """One object: a two-column table of its fields, or a JSON object."""
        if self.as_json:
            self.data(fields)
            return
        self.table(("field", "value"), [(k, v) for k, v in fields.items()], title=title)

    def data(self, value: Any) -> None:
        """Any JSON-shaped value, as indented JSON."""
        self._write(json.dumps(jsonable(value), indent=2, ensure_ascii=False))

    def stream_row(self, fields: Mapping[str, Any]) -> None:
        """One row of a command that prints rows as they arrive: a JSON object per line, or
        tab-separated values under a header line printed before the first row."""
        if self.as_json:
            self._write(json.dumps(jsonable(fields), ensure_ascii=False))
            return
        if not self._stream_header_done:
            self._write("\t".join(fields))
            self._stream_header_done = True
        self._write("\t".join(_cell(v) for v in fields.values()))

    def _write(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        # Rows are read by a person or a pipe while the command still runs (tail -f style).
        sys.stdout.flush()

    @contextmanager
    def progress(self, description: str, total: int | None) -> Iterator[Advance]:
        """A progress bar on stderr while the block runs, shown only on a terminal (stdout
        stays clean for ``--json``)."""
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=True,
            disable=not err.is_terminal,
        ) as progress:
            task = progress.add_task(description, total=total)

            def advance(steps: int = 1) -> None:
                progress.advance(task, steps)

            yield advance


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    if isinstance(value, list | tuple | set | frozenset):
        return ", ".join(_cell(v) for v in value)
    return str(value)
