"""The server commands: ``orbitmq namesrv``, ``orbitmq broker -c broker.conf`` and
``orbitmq start`` (a name server and a broker in one process, with embedded defaults).

Servers run on one event loop (uvloop when installed) until SIGTERM or SIGINT, then stop
cleanly: the broker unregisters, flushes its store and removes the abort file. A bad
configuration, a port in use or a data directory held by another process is one line on
stderr and a non-zero exit, before anything in the data directory changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import click

from orbitmq.broker import BrokerConfig, BrokerController, load_broker_config
from orbitmq.cli.console import fail, say, warn
from orbitmq.cli.grpc_starter import start_grpc
from orbitmq.cli.log_level import log_level_option
from orbitmq.cli.open_files import raise_open_files_limit
from orbitmq.cli.web_console import ConsoleLogin, ConsoleStarter, console_ssl, console_starter
from orbitmq.client import ClientConfig
from orbitmq.common.errors import ConfigError
from orbitmq.common.metrics_exporter_type import MetricsExporterType
from orbitmq.common.socket_address import is_wildcard
from orbitmq.namesrv import NamesrvConfig, NamesrvController, load_namesrv_config
from orbitmq.protocol import DEFAULT_BROKER_PORT, DEFAULT_NAMESRV_PORT
from orbitmq.remoting import DEFAULT_PROM_EXPORTER_PORT, TlsSystemConfig, load_tls_config, run
from orbitmq.store import MessageStoreConfig, StoreError

#: ``orbitmq start``'s embedded defaults: a developer's machine, reachable from itself only
#: (the ports are RocketMQ's).
DEFAULT_BROKER_NAME = "broker-a"
DEFAULT_DATA_DIR = "~/orbitmq-store"
DEFAULT_START_BIND = "127.0.0.1"

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
    _tune_gc()
    try:
        await stopping.wait()
    finally:
        say("OrbitMQ stopping ...")
        await stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)
    say("OrbitMQ stopped.")


#: Allocations (less deallocations) of container objects between two young-generation
#: collections in a server process (Python's default: 700).
SERVER_GC_THRESHOLD0 = 20_000


def _tune_gc() -> None:
    """Once the servers are up: what start-up made (modules, configs, recovered tables) is
    moved out of the collector's reach, and young collections run every 20 000 allocations
    instead of every 700. Every request allocates tasks, futures and frames; with the
    defaults the collector took about 15 % of a broker's loop under many small requests
    (POP with an ack per message; docs/benchmarks.md, "POP consumption"), its older
    generations walking the start-up objects again and again."""
    gc.freeze()
    _, threshold1, threshold2 = gc.get_threshold()
    gc.set_threshold(SERVER_GC_THRESHOLD0, threshold1, threshold2)


def serve_until_signal(start: Starter) -> None:
    """Run ``start``'s servers until SIGTERM or SIGINT; a bad setting or a busy port is one
    line on stderr."""
    limit = raise_open_files_limit()
    if limit.raised:
        say(f"open files limit raised from {limit.before} to {limit.after} (the hard limit)")
    try:
        run(_serve(start))
    except (ConfigError, StoreError) as exc:
        fail(str(exc))
    except OSError as exc:
        # Most often a port in use ("error while attempting to bind on address ...").
        fail(str(exc) or repr(exc))


def _listening_on(host: str) -> str:
    return f"every interface ({host or '0.0.0.0'})" if is_wildcard(host) else host


def _warn_if_exposed(host: str, ports: str) -> None:
    if is_wildcard(host):
        warn(
            f"listening on every interface without authentication: anyone who reaches this "
            f"host on {ports} can read and write every topic (bindAddress=127.0.0.1 keeps it "
            "to this machine)"
        )


@click.command()
@click.option("-c", "--config", "config_path", type=click.Path(), help="namesrv.conf")
@click.option("--listen-port", type=int, help="Override listenPort (0: any free port).")
@click.option("--bind", help="Override bindAddress (default 0.0.0.0: every interface).")
@log_level_option()
def namesrv(config_path: str | None, listen_port: int | None, bind: str | None) -> None:
    """Run a name server (default port 9876, RocketMQ's)."""
    try:
        config = load_namesrv_config(config_path)
        tls = load_tls_config(config_path)
    except ConfigError as exc:
        fail(str(exc))
    if listen_port is not None:
        config.listen_port = listen_port
    if bind is not None:
        config.bind_address = bind

    async def start() -> Callable[[], Awaitable[None]]:
        controller = NamesrvController(config, tls=tls)
        await controller.start()
        _warn_if_exposed(config.bind_address, f"port {controller.port}")
        say(
            f"OrbitMQ name server ready on {controller.address}, "
            f"listening on {_listening_on(config.bind_address)}"
        )
        _say_metrics(None, controller)
        return controller.stop

    serve_until_signal(start)


@click.command()
@click.option("-c", "--config", "config_path", type=click.Path(), required=True, help="broker.conf")
@click.option("--listen-port", type=int, help="Override listenPort (0: any free port).")
@click.option("-n", "--namesrv-addr", help="Override namesrvAddr (host:port;host:port).")
@click.option("--bind", help="Override bindAddress (default 0.0.0.0: every interface).")
@click.option(
    "--grpc-port",
    type=int,
    help="Serve the gRPC endpoint (RocketMQ 5 clients) on this port (0: any free port; "
    "-1: off); default: broker.conf grpcServerPort when set, else off.",
)
@log_level_option()
def broker(
    config_path: str,
    listen_port: int | None,
    namesrv_addr: str | None,
    bind: str | None,
    grpc_port: int | None,
) -> None:
    """Run a broker configured by broker.conf (RocketMQ's keys)."""
    try:
        startup = load_broker_config(config_path)
        tls = load_tls_config(config_path)
    except ConfigError as exc:
        fail(str(exc))
    broker_config, store_config = startup.broker, startup.store
    # A lone broker serves gRPC only when asked (as RocketMQ's broker runs a proxy only when
    # enabled): several brokers on one host would otherwise all claim 8081.
    if grpc_port is not None:
        broker_config.grpc_server_port = grpc_port
    elif "grpcServerPort" not in startup.keys:
        broker_config.grpc_server_port = -1
    if not -1 <= broker_config.grpc_server_port < 65536:
        fail(f"--grpc-port: {broker_config.grpc_server_port} is not a port (-1: off)")
    if listen_port is not None:
        broker_config.listen_port = listen_port
        follow_listen_port(store_config, listen_port, startup.keys)
    if namesrv_addr is not None:
        broker_config.namesrv_addr = namesrv_addr
    if bind is not None:
        broker_config.bind_address = bind

    async def start() -> Callable[[], Awaitable[None]]:
        controller = BrokerController(broker_config, store_config, config_path=config_path, tls=tls)
        await controller.start()
        try:
            grpc_text, stop_grpc = await start_grpc(controller)
        except BaseException:
            await controller.stop()
            raise
        names = ", ".join(broker_config.namesrv_addresses) or "none"
        if not broker_config.acl_enable:
            _warn_if_exposed(
                broker_config.bind_address, f"ports {controller.port} and {controller.fast_port}"
            )
        say(
            f"OrbitMQ broker ready: {controller.address} "
            f"({broker_config.broker_cluster_name}/{broker_config.broker_name}), "
            f"VIP channel port {controller.fast_port}, "
            f"listening on {_listening_on(broker_config.bind_address)}, "
            f"name servers: {names}, data in {store_config.store_path_root_dir}, {grpc_text}"
        )
        _say_metrics(controller, None)

        async def stop() -> None:
            try:
                await stop_grpc()
            finally:
                await controller.stop()

        return stop

    serve_until_signal(start)


def _say_metrics(broker: BrokerController | None, namesrv: NamesrvController | None) -> None:
    """Where Prometheus scrapes, when metrics are served."""
    urls = []
    if broker is not None and broker.metrics_manager.exporter is not None:
        urls.append(f"broker {broker.metrics_manager.exporter.url}")
    if namesrv is not None and namesrv.metrics.exporter is not None:
        urls.append(f"name server {namesrv.metrics.exporter.url}")
    if urls:
        say(f"Prometheus metrics: {', '.join(urls)}")


@dataclass(slots=True)
class EmbeddedConfig:
    """``orbitmq start``'s settings for its name server and broker."""

    namesrv: NamesrvConfig
    broker: BrokerConfig
    store: MessageStoreConfig
    #: namesrvAddr from the file; None: the embedded name server.
    namesrv_addr: str | None
    #: The file's tls.* keys (and tls.config.file's), for both servers.
    tls: TlsSystemConfig


def follow_listen_port(store: MessageStoreConfig, listen_port: int, keys: frozenset[str]) -> None:
    """haListenPort follows a listen port given on the command line (listenPort + 1, as
    broker.conf's listenPort sets it), unless broker.conf sets haListenPort itself: a second
    server on other ports must not reach for the first one's HA port. Port 0 (any free
    port) takes any free HA port too."""
    if "haListenPort" not in keys:
        store.ha_listen_port = listen_port + 1 if listen_port else 0


def embedded_config(
    config_path: str | None,
    data_dir: str | None,
    namesrv_port: int | None = None,
    listen_port: int | None = None,
    bind: str | None = None,
    metrics_port: int | None = None,
    console_port: int | None = None,
    grpc_port: int | None = None,
) -> EmbeddedConfig:
    """``orbitmq start``'s settings: the embedded defaults, under broker.conf if given (every
    key in the file wins over the defaults), under the command-line options."""
    startup = load_broker_config(config_path, environ={})
    keys = startup.keys
    broker_config, store_config = startup.broker, startup.store
    if "brokerName" not in keys:
        broker_config.broker_name = DEFAULT_BROKER_NAME
    if data_dir is not None or "storePathRootDir" not in keys:
        root = Path(data_dir or DEFAULT_DATA_DIR).expanduser().resolve()
        store_config.store_path_root_dir = str(root)
    if listen_port is not None:
        broker_config.listen_port = listen_port
        follow_listen_port(store_config, listen_port, keys)
    if bind is not None:
        broker_config.bind_address = bind
    elif "bindAddress" not in keys:
        broker_config.bind_address = DEFAULT_START_BIND
    root = Path(store_config.store_path_root_dir)
    namesrv_config = NamesrvConfig(
        listen_port=DEFAULT_NAMESRV_PORT if namesrv_port is None else namesrv_port,
        bind_address=broker_config.bind_address,
        kv_config_path=str(root / "namesrv" / "kvConfig.json"),
        config_store_path=str(root / "namesrv" / "namesrv.properties"),
    )
    if not 0 <= namesrv_config.listen_port < 65536:
        raise ConfigError(f"--namesrv-port: {namesrv_config.listen_port} is not a port")
    if not 0 <= broker_config.listen_port < 65536:
        raise ConfigError(f"--listen-port: {broker_config.listen_port} is not a port")
    _embedded_metrics(broker_config, namesrv_config, keys, metrics_port)
    if console_port is not None:
        broker_config.console_port = console_port
    elif broker_config.listen_port == 0 and "consolePort" not in keys:
        broker_config.console_port = 0
    if not -1 <= broker_config.console_port < 65536:
        raise ConfigError(f"--console-port: {broker_config.console_port} is not a port (-1: off)")
    if grpc_port is not None:
        broker_config.grpc_server_port = grpc_port
    elif broker_config.listen_port == 0 and "grpcServerPort" not in keys:
        broker_config.grpc_server_port = 0
    if not -1 <= broker_config.grpc_server_port < 65536:
        raise ConfigError(f"--grpc-port: {broker_config.grpc_server_port} is not a port (-1: off)")
    if "consoleAclEnable" not in keys:
        broker_config.console_acl_enable = broker_config.acl_enable
    namesrv_addr = broker_config.namesrv_addr if "namesrvAddr" in keys else None
    tls = load_tls_config(config_path)
    return EmbeddedConfig(namesrv_config, broker_config, store_config, namesrv_addr, tls)


def _embedded_metrics(
    broker: BrokerConfig, namesrv: NamesrvConfig, keys: frozenset[str], metrics_port: int | None
) -> None:
    """Metrics on by default (metricsExporterType=PROM unless the file says otherwise): the
    broker on metricsPromExporterPort (5557), the name server on the next port (two servers
    in one process, as RocketMQ's proxy does). ``--metrics-port`` sets the broker's; with
    ``--listen-port 0`` and no port in the file both take any free port."""
    if "metricsExporterType" not in keys:
        broker.metrics_exporter_type = MetricsExporterType.PROM
    if metrics_port is not None:
        broker.metrics_prom_exporter_port = metrics_port
    elif broker.listen_port == 0 and "metricsPromExporterPort" not in keys:
        broker.metrics_prom_exporter_port = 0
    port = broker.metrics_prom_exporter_port
    if not 0 <= port < 65535:
        raise ConfigError(
            f"--metrics-port: {port} is not a port (0..65534; the name server's is next)"
        )
    namesrv.metrics_exporter_type = broker.metrics_exporter_type
    namesrv.metrics_prom_exporter_host = broker.metrics_prom_exporter_host
    namesrv.metrics_prom_exporter_port = port + 1 if port else 0
    namesrv.metrics_label = broker.metrics_label


def _console_of(config: BrokerConfig, tls: TlsSystemConfig) -> ConsoleStarter | None:
    """The console to serve beside the broker, connecting as the broker does (tls.enable),
    over HTTPS with consoleCertPath; None when consolePort is -1. ConfigError for a
    certificate that cannot be loaded."""
    if config.console_port == -1:
        return None
    client_config = ClientConfig(use_tls=tls.enable, tls_config=tls)
    https = console_ssl(
        config.console_cert_path, config.console_key_path, config.console_key_password
    )
    login = (
        ConsoleLogin(config.console_session_timeout_minutes * 60.0)
        if config.console_acl_enable
        else None
    )
    return console_starter(config.bind_address, config.console_port, client_config, https, login)


async def _start_console(
    console: ConsoleStarter | None,
    config: BrokerConfig,
    broker: BrokerController,
    namesrv: NamesrvController,
) -> tuple[str, Callable[[], Awaitable[None]]]:
    """Start the console over the broker's name servers; both servers are stopped again
    when it cannot start (its port in use)."""
    if console is None or config.namesrv_addr is None:
        return "console off", _no_console
    try:
        return await console(config.namesrv_addr)
    except BaseException:
        try:
            await broker.stop()
        finally:
            await namesrv.stop()
        raise


async def _no_console() -> None:
    return None


async def _start_beside(
    console: ConsoleStarter | None,
    config: BrokerConfig,
    broker: BrokerController,
    namesrv: NamesrvController,
) -> tuple[str, Callable[[], Awaitable[None]]]:
    """The gRPC endpoint, then the console, beside a started broker: the ready line's words
    for both and one stop for both. When either cannot start, everything is stopped."""
    try:
        grpc_text, stop_grpc = await start_grpc(broker)
    except BaseException:
        try:
            await broker.stop()
        finally:
            await namesrv.stop()
        raise
    try:
        console_text, stop_console = await _start_console(console, config, broker, namesrv)
    except BaseException:
        await stop_grpc()
        raise

    async def stop() -> None:
        try:
            await stop_console()
        finally:
            await stop_grpc()

    return f"{console_text}, {grpc_text}", stop


def config_options(func: Callable[..., None]) -> Callable[..., None]:
    """``-c`` and ``--data-dir``, which ``start`` and ``stop`` read the same way."""
    func = click.option(
        "--data-dir",
        type=click.Path(file_okay=False),
        help=f"Where messages and metadata are kept (default {DEFAULT_DATA_DIR}).",
    )(func)
    return click.option(
        "-c", "--config", "config_path", type=click.Path(), help="broker.conf (as for `broker`)"
    )(func)


@click.command()
@config_options
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
@click.option(
    "--bind",
    help=f"The address both listen on (default {DEFAULT_START_BIND}: this machine only; "
    "0.0.0.0: every interface).",
)
@click.option(
    "--metrics-port",
    type=int,
    help=f"The broker's Prometheus port (default {DEFAULT_PROM_EXPORTER_PORT}, the name "
    "server's is the next; 0: any free port, the default with --listen-port 0).",
)
@click.option(
    "--console-port",
    type=int,
    help="The web console's port (default 8080, broker.conf consolePort; -1: no console; "
    "0: any free port, the default with --listen-port 0).",
)
@click.option(
    "--grpc-port",
    type=int,
    help="The gRPC endpoint's port (RocketMQ 5 clients; default 8081, broker.conf "
    "grpcServerPort; -1: off; 0: any free port, the default with --listen-port 0).",
)
@click.option(
    "--brokers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="How many brokers (broker-a, broker-b, ...), each its own process and core, one "
    "cluster; their ports step by 10 (docs/operations.md).",
)
@log_level_option()
def start(
    config_path: str | None,
    data_dir: str | None,
    namesrv_port: int | None,
    listen_port: int | None,
    bind: str | None,
    metrics_port: int | None,
    console_port: int | None,
    grpc_port: int | None,
    brokers: int,
) -> None:
    """Run a name server and a broker (--brokers N: N brokers), ready (`orbitmq stop`)."""
    if brokers > 1:
        from orbitmq.cli.broker_group import GroupOptions, run_group  # noqa: PLC0415 (a cycle)

        options = (namesrv_port, listen_port, bind, metrics_port, console_port, grpc_port)
        run_group(GroupOptions(config_path, data_dir, brokers, *options))
        return
    try:
        embedded = embedded_config(
            config_path,
            data_dir,
            namesrv_port,
            listen_port,
            bind,
            metrics_port,
            console_port,
            grpc_port,
        )
        console = _console_of(embedded.broker, embedded.tls)
    except ConfigError as exc:
        fail(str(exc))

    async def start_all() -> Callable[[], Awaitable[None]]:
        namesrv_controller = NamesrvController(embedded.namesrv, tls=embedded.tls)
        broker_config = embedded.broker
        broker_controller: BrokerController | None = None
        try:
            # Both ports before the store: a busy port fails before the data is touched.
            await namesrv_controller.remoting_server.bind()
            broker_config.namesrv_addr = embedded.namesrv_addr or namesrv_controller.address
            broker_controller = BrokerController(
                broker_config, embedded.store, config_path=config_path, tls=embedded.tls
            )
            await broker_controller.bind()
            await namesrv_controller.start()
            await broker_controller.start()
        except BaseException:
            if broker_controller is not None:
                await broker_controller.unbind()
            await namesrv_controller.stop()
            raise
        started_broker = broker_controller
        beside_text, stop_beside = await _start_beside(
            console, broker_config, started_broker, namesrv_controller
        )

        async def stop_all() -> None:
            try:
                await stop_beside()
                await started_broker.stop()
            finally:
                await namesrv_controller.stop()

        _warn_if_exposed(
            broker_config.bind_address,
            f"ports {namesrv_controller.port}, {started_broker.port} and "
            f"{started_broker.fast_port}",
        )
        say(
            f"OrbitMQ ready: name server {namesrv_controller.address}, "
            f"broker {started_broker.address} "
            f"({broker_config.broker_cluster_name}/{broker_config.broker_name}), "
            f"listening on {_listening_on(broker_config.bind_address)}, "
            f"data in {embedded.store.store_path_root_dir}, {beside_text}"
        )
        _say_metrics(started_broker, namesrv_controller)
        return stop_all

    serve_until_signal(start_all)
