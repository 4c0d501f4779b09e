"""The ``orbitmq`` command: the servers (``namesrv``, ``broker``, ``start``, ``stop``), the
operator's tools (``admin``: mqadmin's commands; ``send``, ``consume``, ``query``) and the
Spark ``pipeline`` jobs. Global options (``--log-level``) go before or after the
subcommand; ``--version`` prints the installed version and whether it runs compiled (mypyc)
or pure Python, and why."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import click

from orbitmq import _compiled
from orbitmq.cli.admin import admin
from orbitmq.cli.console import fail
from orbitmq.cli.consume import consume
from orbitmq.cli.group_member import group_broker
from orbitmq.cli.log_level import DEFAULT_LEVEL, log_level_option
from orbitmq.cli.query import query
from orbitmq.cli.send import send
from orbitmq.cli.servers import broker, namesrv, start
from orbitmq.cli.stop import stop
from orbitmq.cli.web_console import console


def _version() -> str:
    try:
        return version("orbitmq")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    _version(),
    "-V",
    "--version",
    prog_name="orbitmq",
    message=f"%(prog)s, version %(version)s ({_compiled.state().description})",
)
@log_level_option(DEFAULT_LEVEL)
def cli() -> None:
    """OrbitMQ: a message queue that speaks RocketMQ's protocols."""


@cli.command(
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    add_help_option=False,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def pipeline(args: tuple[str, ...]) -> None:
    """Spark jobs over topics: archive, rebalance-backlog, lag-report (orbitmq[spark])."""
    try:
        # Imported here: PySpark takes half a second to import, and only these commands
        # need it.
        from orbitmq.spark.jobs.commands import pipeline as jobs  # noqa: PLC0415
    except ImportError as exc:
        fail(f"the pipeline commands need the spark extra: pip install 'orbitmq[spark]' ({exc})")
    jobs.main(list(args), prog_name="orbitmq pipeline")


for _command in (namesrv, broker, start, stop, console, admin, send, consume, query, group_broker):
    cli.add_command(_command)


def main() -> None:
    """The console-script entry point."""
    cli(prog_name="orbitmq")


if __name__ == "__main__":
    main()
