"""``orbitmq admin``: mqadmin's commands, with its names and short options (``-n`` name
server, ``-t`` topic, ``-g`` group, ``-b`` broker, ``-c`` cluster, ``-i`` message id ...),
grouped by section in ``--help``. Each section is a module with a ``CommandRegistry``; a
new section is one more entry in ``SECTIONS``."""

from __future__ import annotations

import click

from orbitmq.cli.admin import acl, broker, cluster, dlq, group, message, namesrv, topic
from orbitmq.cli.admin.registry import CommandRegistry

#: The sections in the order ``orbitmq admin --help`` lists them.
SECTIONS: tuple[CommandRegistry, ...] = (
    topic.COMMANDS,
    group.COMMANDS,
    message.COMMANDS,
    broker.COMMANDS,
    cluster.COMMANDS,
    namesrv.COMMANDS,
    dlq.COMMANDS,
    acl.COMMANDS,
)


#: Long enough for any command's first sentence.
_SHORT_HELP_LIMIT = 200


class AdminGroup(click.Group):
    """The admin command group: its help lists commands section by section instead of in
    one alphabetical list. Stateless beyond click's command table."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for section in SECTIONS:
            # The whole first sentence: write_dl wraps it under its column.
            rows = [
                (c.name or "", c.get_short_help_str(_SHORT_HELP_LIMIT)) for c in section.commands
            ]
            with formatter.section(section.section):
                formatter.write_dl(rows)


@click.group(cls=AdminGroup, context_settings={"help_option_names": ["-h", "--help"]})
def admin() -> None:
    """mqadmin's commands: the same names and short options (-n NAMESRV_ADDR, -t topic,
    -g group, -b broker, -c cluster ...); --json on each prints JSON for scripts."""


for _section in SECTIONS:
    for _command in _section.commands:
        admin.add_command(_command)

__all__ = ["SECTIONS", "AdminGroup", "admin"]
