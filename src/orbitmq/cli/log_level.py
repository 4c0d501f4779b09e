"""``--log-level``: accepted before the subcommand (``orbitmq --log-level INFO start``) and
after it (``orbitmq start --log-level INFO``); logs go to stderr."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.logging import RichHandler

from orbitmq.cli.console import err

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
DEFAULT_LEVEL = "WARNING"

F = TypeVar("F", bound=Callable[..., Any])


def setup_logging(level: str) -> None:
    """One handler on the root logger at ``level`` (set once; later calls change the level)."""
    root = logging.getLogger()
    if not root.handlers:
        handler: logging.Handler
        if err.is_terminal:
            handler = RichHandler(console=err, show_path=False, rich_tracebacks=False)
            line = "%(name)s: %(message)s"
        else:
            # Redirected to a file or a collector: one plain line per record, never wrapped.
            handler = logging.StreamHandler()
            line = "%(asctime)s %(levelname)s %(name)s: %(message)s"
        handler.setFormatter(logging.Formatter(line))
        root.addHandler(handler)
    root.setLevel(level.upper())


def _apply(_ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value is not None:
        setup_logging(value)


def log_level_option(default: str | None = None) -> Callable[[F], F]:
    """The option for the group (with the default) and for each subcommand (without one, so
    that it changes the level only when given there)."""
    return click.option(
        "--log-level",
        type=click.Choice(LEVELS, case_sensitive=False),
        default=default,
        show_default=default is not None,
        expose_value=False,
        is_eager=True,
        callback=_apply,
        help="Logging level (logs go to stderr).",
    )
