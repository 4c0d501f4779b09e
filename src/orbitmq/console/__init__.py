"""The web console: cluster, topics, consumer groups, messages, dead letters and producers,
served over HTTP by aiohttp with Jinja2 pages, read and changed through ``AdminClient`` and
the clients only (never the store or the servers' packages).

``async with ConsoleServer(namesrv_addr="127.0.0.1:9876", port=8080) as console:`` serves it
at ``console.url``; ``orbitmq console`` and ``orbitmq start`` run one."""

from orbitmq.console.console_app import console_app
from orbitmq.console.console_server import DEFAULT_CONSOLE_PORT, ConsoleServer
from orbitmq.console.inputs import ConsoleInputError

__all__ = ["DEFAULT_CONSOLE_PORT", "ConsoleInputError", "ConsoleServer", "console_app"]
