"""What the ``orbitmq`` command prints: results on stdout, errors and warnings on stderr, one
line each, never wrapped (scripts and tests read them)."""

from __future__ import annotations

import sys
from typing import NoReturn

from rich.console import Console
from rich.markup import escape

EXIT_ERROR = 1

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str) -> NoReturn:
    """One line on stderr, then exit 1."""
    err.print(f"[bold red]orbitmq: error:[/] {escape(message)}", markup=True)
    sys.exit(EXIT_ERROR)


def warn(message: str) -> None:
    err.print(f"[bold yellow]orbitmq: warning:[/] {escape(message)}", markup=True)


def say(message: str) -> None:
    out.print(message, markup=False)
    sys.stdout.flush()
