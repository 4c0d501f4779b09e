"""What every operator command (``orbitmq admin ...``, ``send``, ``consume``, ``query``)
shares: the name server option (``-n``, or ``NAMESRV_ADDR`` from the environment, as
mqadmin), ``--json``, the plain ACL credentials (``--access-key`` / ``--secret-key``, or
ORBITMQ_ACCESS_KEY / ORBITMQ_SECRET_KEY), reading times, and running the command's client
work on an event loop with every expected failure turned into one line on stderr and exit
status 1."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import click

from orbitmq.cli.console import fail
from orbitmq.cli.output import Output
from orbitmq.cli.timestamps import TimestampError, parse_timestamp_ms
from orbitmq.client import AdminClient, ClientConfig
from orbitmq.common import OrbitError
from orbitmq.protocol import DEFAULT_NAMESRV_PORT
from orbitmq.remoting import run

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

    def client_config(self, timeout_ms: int | None = None) -> ClientConfig:
        """The clients' settings: this session's name servers and, when given, the timeout
        of each request (mqadmin's ``-t timeoutMillis`` where a command has one)."""
        # The default instance name (pid and a counter): a client id of its own each run,
        # as mqadmin's tools take the current time.
        config = ClientConfig(
            namesrv_addr=self.namesrv_addr, access_key=self.access_key, secret_key=self.secret_key
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


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, TimeoutError) and not isinstance(exc, OrbitError):
        return f"timed out: {text}"
    return text


def session_options(command: Callable[..., None]) -> Callable[..., None]:
    """Adds ``-n/--namesrvAddr``, ``--json`` and the ACL credentials to a command, which
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
        as_json: bool,
        access_key: str | None,
        secret_key: str | None,
        **kwargs: Any,
    ) -> None:
        session = Session(namesrv_addr, Output(as_json=as_json), access_key, secret_key)
        command(session, *args, **kwargs)

    return with_session
