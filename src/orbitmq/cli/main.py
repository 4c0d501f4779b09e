"""The ``orbitmq`` command: ``orbitmq namesrv``, ``orbitmq broker -c broker.conf`` and
``orbitmq start`` (a name server and a broker in one process, with embedded defaults).

Servers run on one event loop (uvloop when installed) until SIGTERM or SIGINT, then stop
cleanly: the broker unregisters, flushes its store and removes the abort file. A bad
configuration or a port in use is one line on stderr and a non-zero exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import click
from rich.console import Console
from rich.logging import RichHandler

from orbitmq.broker import BrokerConfig, BrokerController, load_broker_config
from orbitmq.common.errors import ConfigError
from orbitmq.common.java_properties import parse_properties
from orbitmq.namesrv import NamesrvConfig, NamesrvController, load_namesrv_config
from orbitmq.remoting import run
from orbitmq.store import MessageStoreConfig

log = logging.getLogger("orbitmq.cli")

#: ``orbitmq start``'s embedded defaults.
DEFAULT_NAMESRV_PORT = 9876
DEFAULT_BROKER_PORT = 10911
DEFAULT_BROKER_NAME = "broker-a"
DEFAULT_DATA_DIR = "~/orbitmq-store"

EXIT_ERROR = 1

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


def _fail(message: str) -> NoReturn:
    _err.print(f"[bold red]orbitmq: error:[/] {message}", markup=True)
    sys.exit(EXIT_ERROR)


def _say(message: str) -> None:
    _out.print(message, markup=False)
    sys.stdout.flush()


def _setup_logging(level: str) -> None:
    handler: logging.Handler
    if _err.is_terminal:
        handler = RichHandler(console=_err, show_path=False, rich_tracebacks=False)
        line = "%(name)s: %(message)s"
    else:
        # Redirected to a file or a collector: one plain line per record, never wrapped.
        handler = logging.StreamHandler()
        line = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=level.upper(), format=line, handlers=[handler])


# -- running servers ----------------------------------------------------------------------


Starter = Callable[[], Awaitable[Callable[[], Awaitable[None]]]]


async def _serve(start: Starter) -> None:
    """``start`` brings the servers up and returns how to stop them; serve until SIGTERM or
    SIGINT."""
    loop = asyncio.get_running_loop()
    stopping = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
            loop.add_signal_handler(sig, stopping.set)
    stop = await start()
    try:
        await stopping.wait()
    finally:
        _say("OrbitMQ stopping ...")
        await stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)
    _say("OrbitMQ stopped.")


def _run(start: Starter) -> None:
    try:
        run(_serve(start))
    except ConfigError as exc:
        _fail(str(exc))
    except OSError as exc:
        # Most often a port in use ("error while attempting to bind on address ...").
        _fail(str(exc) or repr(exc))


# -- the command --------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
    default="WARNING",
    show_default=True,
    help="Logging level (logs go to stderr).",
)
def cli(log_level: str) -> None:
    """OrbitMQ: a message queue that speaks RocketMQ's protocols."""
    _setup_logging(log_level)


@cli.command()
@click.option("-c", "--config", "config_path", type=click.Path(), help="namesrv.conf")
@click.option("--listen-port", type=int, help="Override listenPort (0: any free port).")
def namesrv(config_path: str | None, listen_port: int | None) -> None:
    """Run a name server (default port 9876)."""
    try:
        config = load_namesrv_config(config_path)
    except ConfigError as exc:
        _fail(str(exc))
    if listen_port is not None:
        config.listen_port = listen_port

    async def start() -> Callable[[], Awaitable[None]]:
        controller = NamesrvController(config)
        await controller.start()
        _say(f"OrbitMQ name server ready on {controller.address}")
        return controller.stop

    _run(start)


@cli.command()
@click.option("-c", "--config", "config_path", type=click.Path(), required=True, help="broker.conf")
@click.option("--listen-port", type=int, help="Override listenPort (0: any free port).")
@click.option("-n", "--namesrv-addr", help="Override namesrvAddr (host:port;host:port).")
def broker(config_path: str, listen_port: int | None, namesrv_addr: str | None) -> None:
    """Run a broker configured by broker.conf (RocketMQ's keys)."""
    try:
        startup = load_broker_config(config_path)
    except ConfigError as exc:
        _fail(str(exc))
    broker_config, store_config = startup.broker, startup.store
    if listen_port is not None:
        broker_config.listen_port = listen_port
    if namesrv_addr is not None:
        broker_config.namesrv_addr = namesrv_addr

    async def start() -> Callable[[], Awaitable[None]]:
        controller = BrokerController(broker_config, store_config)
        await controller.start()
        names = ", ".join(broker_config.namesrv_addresses) or "none"
        _say(
            f"OrbitMQ broker ready: {controller.address} "
            f"({broker_config.broker_cluster_name}/{broker_config.broker_name}), "
            f"name servers: {names}, data in {store_config.store_path_root_dir}"
        )
        return controller.stop

    _run(start)


@dataclass(slots=True)
class _Embedded:
    namesrv: NamesrvConfig
    broker: BrokerConfig
    store: MessageStoreConfig
    #: namesrvAddr from the file; None: the embedded name server.
    namesrv_addr: str | None


def _embedded_config(
    config_path: str | None,
    data_dir: str | None,
    namesrv_port: int | None,
    listen_port: int | None,
) -> _Embedded:
    """``orbitmq start``'s settings: the embedded defaults, under broker.conf if given (every
    key in the file wins over the defaults), under the command-line options."""
    keys: set[str] = set()
    if config_path is not None:
        startup = load_broker_config(config_path, environ={})
        with contextlib.suppress(OSError):  # read fine just above
            keys = set(parse_properties(Path(config_path).read_text(encoding="utf-8")))
        broker_config, store_config = startup.broker, startup.store
    else:
        startup = load_broker_config(None, environ={})
        broker_config, store_config = startup.broker, startup.store
    if "brokerName" not in keys:
        broker_config.broker_name = DEFAULT_BROKER_NAME
    if data_dir is not None or "storePathRootDir" not in keys:
        root = Path(data_dir or DEFAULT_DATA_DIR).expanduser().resolve()
        store_config.store_path_root_dir = str(root)
    if listen_port is not None:
        broker_config.listen_port = listen_port
    root = Path(store_config.store_path_root_dir)
    namesrv_config = NamesrvConfig(
        listen_port=DEFAULT_NAMESRV_PORT if namesrv_port is None else namesrv_port,
        kv_config_path=str(root / "namesrv" / "kvConfig.json"),
    )
    if not 0 <= namesrv_config.listen_port < 65536:
        raise ConfigError(f"--namesrv-port: {namesrv_config.listen_port} is not a port")
    if not 0 <= broker_config.listen_port < 65536:
        raise ConfigError(f"--listen-port: {broker_config.listen_port} is not a port")
    namesrv_addr = broker_config.namesrv_addr if "namesrvAddr" in keys else None
    return _Embedded(namesrv_config, broker_config, store_config, namesrv_addr)


@cli.command()
@click.option(
    "-c", "--config", "config_path", type=click.Path(), help="broker.conf (as for `broker`)"
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False),
    help=f"Where messages and metadata are kept (default {DEFAULT_DATA_DIR}).",
)
@click.option(
    "--namesrv-port",
    type=int,
    help=f"The name server's port (default {DEFAULT_NAMESRV_PORT}; 0: any free port).",
)
@click.option(
    "--listen-port",
    type=int,
    help=f"The broker's port (default {DEFAULT_BROKER_PORT}; 0: any free port).",
)
def start(
    config_path: str | None,
    data_dir: str | None,
    namesrv_port: int | None,
    listen_port: int | None,
) -> None:
    """Run a name server and a broker in one process, ready to use."""
    try:
        embedded = _embedded_config(config_path, data_dir, namesrv_port, listen_port)
    except ConfigError as exc:
        _fail(str(exc))

    async def start_all() -> Callable[[], Awaitable[None]]:
        namesrv_controller = NamesrvController(embedded.namesrv)
        await namesrv_controller.start()
        broker_config = embedded.broker
        broker_config.namesrv_addr = embedded.namesrv_addr or namesrv_controller.address
        try:
            broker_controller = BrokerController(broker_config, embedded.store)
            await broker_controller.start()
        except BaseException:
            await namesrv_controller.stop()
            raise

        async def stop_all() -> None:
            try:
                await broker_controller.stop()
            finally:
                await namesrv_controller.stop()

        _say(
            f"OrbitMQ ready: name server {namesrv_controller.address}, "
            f"broker {broker_controller.address} "
            f"({broker_config.broker_cluster_name}/{broker_config.broker_name}), "
            f"data in {embedded.store.store_path_root_dir}"
        )
        return stop_all

    _run(start_all)


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
        _fail(f"the pipeline commands need the spark extra: pip install 'orbitmq[spark]' ({exc})")
    jobs.main(list(args), prog_name="orbitmq pipeline")


def main() -> None:
    """The console-script entry point."""
    cli(prog_name="orbitmq")


if __name__ == "__main__":
    main()
