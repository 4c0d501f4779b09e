"""``CommandRegistry``: the commands of one section of ``orbitmq admin`` (topic, group,
message, ...). A command is added by decorating it in its section's module with
``@SECTION.command("mqadminName")``; the admin group lists every registry's commands under
the section's title."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click


class CommandRegistry:
    """Owns one section's title and its click commands, in the order they were registered.
    Filled at import time; read-only afterwards."""

    def __init__(self, section: str) -> None:
        self.section = section
        self.commands: list[click.Command] = []

    def command(self, name: str) -> Callable[[Callable[..., Any]], click.Command]:
        """Register the decorated function as the command ``name`` (mqadmin's name)."""

        def register(function: Callable[..., Any]) -> click.Command:
            command = click.command(name)(function)
            self.commands.append(command)
            return command

        return register

    def add(self, command: click.Command) -> click.Command:
        """Register a command built elsewhere (a group such as ``dlq``)."""
        self.commands.append(command)
        return command
