"""``ConsoleServer``: the console's HTTP listener and the admin client behind it."""

from __future__ import annotations

import ssl
from typing import Final

from aiohttp import web

from orbitmq.client import AdminClient, ClientConfig
from orbitmq.common import AsyncLifetime
from orbitmq.console.console_app import console_app

#: rocketmq-dashboard's port; ``orbitmq start --console-port`` / broker.conf consolePort.
DEFAULT_CONSOLE_PORT: Final = 8080


class ConsoleServer(AsyncLifetime):
    """Owns an AdminClient on ``namesrv_addr`` and the aiohttp site serving the console on
    ``host``:``port`` (0: any free port; ``port`` tells the one bound after start). Start and
    stop from one event loop; the pages it serves run as tasks of that loop."""

    def __init__(
        self,
        *,
        namesrv_addr: str,
        host: str = "127.0.0.1",
        port: int = 8080,
        client_config: ClientConfig | None = None,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """``client_config``: how the admin client connects (TLS, credentials);
        ``ssl_context``: serve HTTPS with it (None: HTTP)."""
        self._ssl_context = ssl_context
        self.admin = AdminClient(namesrv_addr=namesrv_addr, client_config=client_config)
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        scheme = "https" if self._ssl_context is not None else "http"
        return f"{scheme}://{host}:{self.port}/"

    async def start(self) -> None:
        await self.admin.start()
        runner = web.AppRunner(console_app(self.admin), access_log=None)
        try:
            await runner.setup()
            site = web.TCPSite(runner, self.host, self.port, ssl_context=self._ssl_context)
            await site.start()
        except BaseException:
            await runner.cleanup()
            await self.admin.shutdown()
            raise
        self._runner = runner
        # The port bound, when asked for any free one.
        self.port = int(runner.addresses[0][1])

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()
        await self.admin.shutdown()

    async def _stop(self) -> None:
        await self.stop()
