"""What every page shares: the admin client a page reads through (the application's, or
the logged-in user's when the console asks for ACL credentials), the Jinja2 environment
(autoescaped; the templates ship in this package) and rendering a page or JSON."""

from __future__ import annotations

from typing import Any, Final

import jinja2
from aiohttp import web
from yarl import URL

from orbitmq.client import AdminClient
from orbitmq.console.console_sessions import ConsoleSession
from orbitmq.console.inputs import format_ms

ADMIN_KEY: Final = web.AppKey("admin", AdminClient)
#: The logged-in user's session, set on each request when the console asks for a login.
SESSION_KEY: Final = web.RequestKey("session", ConsoleSession)

#: One environment for the process: templates are read once and shared (read-only after
#: creation, so safe from any task).
_ENV: Final = jinja2.Environment(
    loader=jinja2.PackageLoader("orbitmq.console", "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
)
_ENV.filters["ms"] = format_ms

#: The navigation bar: path, title.
NAV: Final = (
    ("/", "Cluster"),
    ("/topics", "Topics"),
    ("/groups", "Consumers"),
    ("/producers", "Producers"),
    ("/messages", "Messages"),
    ("/dlq", "Dead letters"),
)


def admin_of(request: web.Request) -> AdminClient:
    session = request.get(SESSION_KEY)
    return session.admin if session is not None else request.app[ADMIN_KEY]


def render(
    request: web.Request, template: str, context: dict[str, Any], *, status: int = 200
) -> web.Response:
    session = request.get(SESSION_KEY)
    page = _ENV.get_template(template).render(
        nav=NAV,
        path=request.path,
        notice=request.query.get("notice", ""),
        user=session.access_key if session is not None else "",
        **context,
    )
    return web.Response(text=page, status=status, content_type="text/html")


def redirect(location: str, notice: str) -> web.HTTPSeeOther:
    """After a change (POST), back to a page that shows ``notice``."""
    return web.HTTPSeeOther(location=URL(location).update_query(notice=notice))


async def form(request: web.Request) -> dict[str, str]:
    return {k: v for k, v in (await request.post()).items() if isinstance(v, str)}
