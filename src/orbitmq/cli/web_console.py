"""``orbitmq console``: the web console alone, over a running cluster's name servers; and
the console ``orbitmq start`` serves beside its broker (consolePort)."""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import click

from orbitmq.cli.console import fail, say, warn
from orbitmq.cli.log_level import log_level_option
from orbitmq.cli.session import TLS_CONFIG_FILE_HELP, TLS_HELP, client_tls
from orbitmq.client import ClientConfig
from orbitmq.common.errors import ConfigError

if TYPE_CHECKING:
    from orbitmq.console import ConsoleServer

#: Starts the console over the given name servers: the ready line's text, how to stop it.
ConsoleStarter = Callable[[str], Awaitable[tuple[str, Callable[[], Awaitable[None]]]]]

#: What to install when the console's libraries (aiohttp, Jinja2) are missing.
CONSOLE_EXTRA = "pip install 'orbitmq[console]'"


@dataclass(frozen=True, slots=True)
class ConsoleLogin:
    """The console asks for ACL credentials (consoleAclEnable, ``--acl``); a login idle for
    ``idle_s`` ends."""

    idle_s: float = 1800.0


def console_class() -> type[ConsoleServer]:
    """The console's server class; ConfigError when its libraries are not installed."""
    try:
        # Imported here: aiohttp and Jinja2 come with the console extra only.
        from orbitmq.console import ConsoleServer  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigError(f"the console needs the console extra: {CONSOLE_EXTRA} ({exc})") from None
    return ConsoleServer


def console_ssl(cert_path: str, key_path: str, key_password: str = "") -> ssl.SSLContext | None:
    """The console's HTTPS context from a certificate chain and its key (PEM); None without
    a certificate. ConfigError naming the files when they cannot be loaded."""
    if not cert_path and not key_path:
        return None
    if not cert_path or not key_path:
        raise ConfigError("the console's HTTPS needs both a certificate and a key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert_path, key_path, password=key_password or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"the console's certificate {cert_path} with the key {key_path}: {exc}"
        ) from exc
    return context


def console_starter(
    host: str,
    port: int,
    client_config: ClientConfig | None = None,
    ssl_context: ssl.SSLContext | None = None,
    login: ConsoleLogin | None = None,
) -> ConsoleStarter:
    """``orbitmq start``'s console, loaded before the servers start (its import takes a
    moment the ready line should not wait for): given the name servers, it starts and gives
    its address for the ready line (or why there is none) and how to stop it. A missing
    extra is a warning, not a failed start."""
    try:
        server_class = console_class()
    except ConfigError as exc:
        warn(f"no console: {exc}")

        async def off(namesrv_addr: str) -> tuple[str, Callable[[], Awaitable[None]]]:
            return "console off (not installed)", _nothing

        return off

    async def start(namesrv_addr: str) -> tuple[str, Callable[[], Awaitable[None]]]:
        server = server_class(
            namesrv_addr=namesrv_addr,
            host=host,
            port=port,
            client_config=client_config,
            ssl_context=ssl_context,
            acl=login is not None,
            session_idle_s=(login or ConsoleLogin()).idle_s,
        )
        await server.start()
        return f"console {server.url}", server.stop

    return start


async def _nothing() -> None:
    return None


@click.command()
@click.option(
    "-n",
    "--namesrv-addr",
    envvar="NAMESRV_ADDR",
    required=True,
    help="The name servers (host:port;host:port; default $NAMESRV_ADDR).",
)
@click.option(
    "--port",
    type=int,
    default=8080,
    show_default=True,
    help="The console's HTTP port (0: any free port).",
)
@click.option(
    "--bind",
    default="127.0.0.1",
    show_default=True,
    help="The address it listens on (0.0.0.0: every interface).",
)
@click.option("--tls", "use_tls", is_flag=True, envvar="ORBITMQ_TLS_ENABLE", help=TLS_HELP)
@click.option(
    "--tls-config-file",
    envvar="ORBITMQ_TLS_CONFIG_FILE",
    type=click.Path(dir_okay=False),
    help=TLS_CONFIG_FILE_HELP,
)
@click.option("--cert", default="", help="Serve HTTPS with this certificate chain (PEM).")
@click.option("--key", default="", help="The certificate's key (PEM), with --cert.")
@click.option(
    "--key-password", default="", envvar="ORBITMQ_CONSOLE_KEY_PASSWORD", help="The key's password."
)
@click.option(
    "--acl",
    "acl",
    is_flag=True,
    envvar="ORBITMQ_CONSOLE_ACL",
    help="Ask for a login with an ACL account (access key and secret key) and read as it: "
    "for a cluster with aclEnable=true.",
)
@click.option(
    "--session-timeout",
    type=click.IntRange(min=1),
    default=30,
    show_default=True,
    help="With --acl: minutes after which an idle login ends.",
)
@log_level_option()
def console(
    namesrv_addr: str,
    port: int,
    bind: str,
    use_tls: bool,
    tls_config_file: str | None,
    cert: str,
    key: str,
    key_password: str,
    acl: bool,
    session_timeout: int,
) -> None:
    """Serve the web console (cluster, topics, groups, messages, dead letters)."""
    # Imported here: the servers' module imports the broker, which this command never needs
    # otherwise.
    from orbitmq.cli.servers import serve_until_signal  # noqa: PLC0415

    if not 0 <= port < 65536:
        fail(f"--port: {port} is not a port (0..65535)")
    try:
        tls = client_tls(use_tls, tls_config_file)
        client_config = ClientConfig(use_tls=tls.enable, tls_config=tls)
        server = console_class()(
            namesrv_addr=namesrv_addr,
            host=bind,
            port=port,
            client_config=client_config,
            ssl_context=console_ssl(cert, key, key_password),
            acl=acl,
            session_idle_s=session_timeout * 60.0,
        )
    except ConfigError as exc:
        fail(str(exc))

    async def start() -> Callable[[], Awaitable[None]]:
        await server.start()
        say(f"OrbitMQ console ready on {server.url} (name servers {namesrv_addr})")
        if acl:
            say("Every page asks for a login with an account of the cluster's plain_acl.yml.")
        return server.stop

    serve_until_signal(start)
