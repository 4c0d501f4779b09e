"""``ConsoleServer``: the console's HTTP listener and the admin client behind it (or, when
it asks for ACL credentials, the logged-in users' sessions)."""

from __future__ import annotations

import dataclasses
import ssl
from typing import Final

from aiohttp import web

from orbitmq.client import AdminClient, ClientConfig, MQClientError
from orbitmq.common import AsyncLifetime
from orbitmq.console.console_app import console_app
from orbitmq.console.console_sessions import DEFAULT_SESSION_IDLE_S, ConsoleSessions

#: rocketmq-dashboard's port; ``orbitmq start --console-port`` / broker.conf consolePort.
DEFAULT_CONSOLE_PORT: Final = 8080


class ConsoleServer(AsyncLifetime):
    """Owns an AdminClient on ``namesrv_addr`` and the aiohttp site serving the console on
    ``host``:``port`` (0: any free port; ``port`` tells the one bound after start). With
    ``acl`` it owns no shared client but the ``sessions`` of users logged in with their ACL
    credentials. Start and stop from one event loop; the pages it serves run as tasks of that
    loop."""

    def __init__(
        self,
        *,
        namesrv_addr: str,
        host: str = "127.0.0.1",
        port: int = 8080,
        client_config: ClientConfig | None = None,
        ssl_context: ssl.SSLContext | None = None,
        acl: bool = False,
        session_idle_s: float = DEFAULT_SESSION_IDLE_S,
    ) -> None:
        """``client_config``: how the admin client connects (TLS, credentials);
        ``ssl_context``: serve HTTPS with it (None: HTTP); ``acl``: every page asks for a
        login (access key and secret key), and a session idle for ``session_idle_s`` ends."""
        self._ssl_context = ssl_context
        config = dataclasses.replace(client_config or ClientConfig(), namesrv_addr=namesrv_addr)
        self._admin: AdminClient | None = None
        self.sessions: ConsoleSessions | None = None
        if acl:
            self.sessions = ConsoleSessions(config, idle_s=session_idle_s)
        else:
            self._admin = AdminClient(client_config=config)
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def admin(self) -> AdminClient:
        """The client every page reads through; a console with ``acl`` has none (each user
        has their own)."""
        if self._admin is None:
            raise MQClientError("this console has no shared admin client: it asks for a login")
        return self._admin

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://{host}:{self.port}/"

    async def start(self) -> None:
        if self._admin is not None:
            await self._admin.start()
        # No access log: the login form's fields must never reach a log.
        runner = web.AppRunner(console_app(self._admin, sessions=self.sessions), access_log=None)
        try:
            await runner.setup()
            site = web.TCPSite(runner, self.host, self.port, ssl_context=self._ssl_context)
            await site.start()
        except BaseException:
            await runner.cleanup()
            await self._close_clients()
            raise
        self._runner = runner
        # The port bound, when asked for any free one.
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self._close_clients()

    async def _close_clients(self) -> None:
        if self._admin is not None:
            await self._admin.shutdown()
        if self.sessions is not None:
            await self.sessions.close_all()

    async def _stop(self) -> None:
        await self.stop()
