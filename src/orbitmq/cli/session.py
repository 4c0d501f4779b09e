"""What every operator command (``orbitmq admin ...``, ``send``, ``consume``, ``query``)
shares: the name server option (``-n``, or ``NAMESRV_ADDR`` from the environment, as
mqadmin), ``--json``, the plain ACL credentials (``--access-key`` / ``--secret-key``, or
ORBITMQ_ACCESS_KEY / ORBITMQ_SECRET_KEY), TLS (``--tls``, ``--tls-config-file``: RocketMQ's
tls.* keys), reading times, and running the command's client work on an event loop with
every expected failure turned into one line on stderr and exit status 1."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from orbitmq.cli.console import fail
from orbitmq.cli.output import Output
from orbitmq.cli.timestamps import TimestampError, parse_timestamp_ms
from orbitmq.client import AdminClient, ClientConfig
from orbitmq.common import OrbitError
from orbitmq.common.errors import ConfigError
from orbitmq.protocol import DEFAULT_NAMESRV_PORT
from orbitmq.remoting import DEFAULT_TLS_CONFIG_FILE, TlsSystemConfig, run

T = TypeVar("T")

#: Where ``orbitmq start`` puts its name server: the address used when neither ``-n`` nor
#: NAMESRV_ADDR gives one.
DEFAULT_NAMESRV_ADDR: Final = f"127.0.0.1:{DEFAULT_NAMESRV_PORT}"


@dataclass(frozen=True, slots=True)
class Session:
    """One command run: where the name servers are and how results print. Immutable; one
    command, one thread."""

    namesrv_addr: str
    out: Output
    #: Plain ACL credentials: with both, every request is signed (a broker with aclEnable).
    access_key: str | None = None
    secret_key: str | None = None
    tls: TlsSystemConfig = field(default_factory=TlsSystemConfig)

    def client_config(self, timeout_ms: int | None = None) -> ClientConfig:
        """The clients' settings: this session's name servers and, when given, the timeout
        of each request (mqadmin's ``-t timeoutMillis`` where a command has one)."""
        # The default instance name (pid and a counter): a client id of its own each run,
        # as mqadmin's tools take the current time.
        config = ClientConfig(
            namesrv_addr=self.namesrv_addr,
            access_key=self.access_key,
            secret_key=self.secret_key,
            use_tls=self.tls.enable,
            tls_config=self.tls,
        )
        if timeout_ms is not None:
            config.mq_client_api_timeout_s = timeout_ms / 1000
        return config

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        """Run ``work`` to its end; an OrbitMQ error or a network error is one line on
        stderr and exit status 1."""
        try:
            return run(work)
        except (OrbitError, OSError, TimeoutError) as exc:
            fail(_one_line(exc))

    def admin(
        self, work: Callable[[AdminClient], Awaitable[T]], *, timeout_ms: int | None = None
    ) -> T:
        """Run ``work`` with a started AdminClient on this session's name servers."""

        async def with_admin() -> T:
            async with AdminClient(client_config=self.client_config(timeout_ms)) as admin:
                return await work(admin)

        return self.run(with_admin())

    def timestamp_ms(self, text: str, what: str) -> int:
        """``text`` read as a time (see :mod:`orbitmq.cli.timestamps`); a bad one fails the
        command with one line naming ``what``."""
        try:
            return parse_timestamp_ms(text, what)
        except TimestampError as exc:
            fail(str(exc))


TLS_HELP: Final = "Connect with TLS (tls.enable; ORBITMQ_TLS_ENABLE=true is read too)."
TLS_CONFIG_FILE_HELP: Final = (
    "A tls.properties with RocketMQ's tls.* keys (tls.config.file; default "
    f"{DEFAULT_TLS_CONFIG_FILE} when it exists; ORBITMQ_TLS_CONFIG_FILE is read too)."
)


def client_tls(use_tls: bool, tls_config_file: str | None) -> TlsSystemConfig:
    """The command's TLS settings: the tls.config.file (given, or RocketMQ's default when it
    exists), with tls.enable forced on by ``--tls``."""
    properties = {"tls.config.file": tls_config_file} if tls_config_file else {}
    if tls_config_file and not Path(tls_config_file).is_file():
        raise ConfigError(f"--tls-config-file: {tls_config_file} is not a readable file")
    tls = TlsSystemConfig.load(properties)
    return tls.with_properties({"tls.enable": "true"}) if use_tls else tls


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, TimeoutError) and not isinstance(exc, OrbitError):
        return f"timed out: {text}"
    return text


def session_options(command: Callable[..., None]) -> Callable[..., None]:
    """Adds ``-n/--namesrvAddr``, ``--json``, the ACL credentials and TLS to a command, which
    receives a ``Session`` as its first argument instead."""

    @click.option(
        "-n",
        "--namesrvAddr",
        "namesrv_addr",
        envvar="NAMESRV_ADDR",
        default=DEFAULT_NAMESRV_ADDR,
        show_default=True,
        metavar="HOST:PORT[;HOST:PORT]",
        help="Name server address(es); NAMESRV_ADDR is read when -n is not given.",
    )
    @click.option("--tls", "use_tls", is_flag=True, envvar="ORBITMQ_TLS_ENABLE", help=TLS_HELP)
    @click.option(
        "--tls-config-file",
        envvar="ORBITMQ_TLS_CONFIG_FILE",
        type=click.Path(dir_okay=False),
        help=TLS_CONFIG_FILE_HELP,
    )
    @click.option("--json", "as_json", is_flag=True, help="Print JSON (for scripts).")
    @click.option(
        "--access-key",
        envvar="ORBITMQ_ACCESS_KEY",
        help="Plain ACL access key (aclEnable brokers); ORBITMQ_ACCESS_KEY when not given.",
    )
    @click.option(
        "--secret-key",
        envvar="ORBITMQ_SECRET_KEY",
        help="Plain ACL secret key; ORBITMQ_SECRET_KEY when not given.",
    )
    @functools.wraps(command)
    def with_session(
        *args: Any,
        namesrv_addr: str,
        use_tls: bool,
        tls_config_file: str | None,
        as_json: bool,
        access_key: str | None,
        secret_key: str | None,
        **kwargs: Any,
    ) -> None:
        try:
            tls = client_tls(use_tls, tls_config_file)
        except ConfigError as exc:
            fail(str(exc))
        session = Session(namesrv_addr, Output(as_json=as_json), access_key, secret_key, tls)
        command(session, *args, **kwargs)

    return with_session
