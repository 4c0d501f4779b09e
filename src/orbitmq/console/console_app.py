"""The console's aiohttp application: one routing table (path → page), the Jinja2 pages, the
static script and style shipped in this package, the one place where errors become a
message on the page, and the login in front of it all when it asks for ACL credentials."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Final

from aiohttp import web
from yarl import URL

from orbitmq.client import AdminClient
from orbitmq.common import OrbitError
from orbitmq.console import cluster_pages, dlq_pages, group_pages, message_pages, topic_pages
from orbitmq.console.console_sessions import ConsoleSessions
from orbitmq.console.inputs import ConsoleInputError
from orbitmq.console.login_pages import SESSIONS_KEY, login, login_form, login_required, logout
from orbitmq.console.page import ADMIN_KEY, render

_LOG = logging.getLogger(__name__)
_STATIC_DIR: Final = Path(__file__).with_name("static")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

#: Every page and action of the console: method, path, handler.
ROUTES: Final[tuple[tuple[str, str, Handler], ...]] = (
    ("GET", "/", cluster_pages.cluster),
    ("GET", "/api/cluster/stats", cluster_pages.cluster_stats),
    ("GET", "/topics", topic_pages.topics),
    ("POST", "/topics", topic_pages.create_topic),
    ("GET", "/topics/{topic}", topic_pages.topic),
    ("POST", "/topics/{topic}/delete", topic_pages.delete_topic),
    ("POST", "/topics/{topic}/send", topic_pages.send_message),
    ("GET", "/api/topics/{topic}/stats", topic_pages.topic_stats),
    ("GET", "/groups", group_pages.groups),
    ("GET", "/groups/{group}", group_pages.group),
    ("POST", "/groups/{group}/reset", group_pages.reset_offsets),
    ("POST", "/groups/{group}/delete", group_pages.delete_group),
    ("GET", "/api/groups/{group}/stats", group_pages.group_stats),
    ("GET", "/producers", group_pages.producers),
    ("GET", "/messages", message_pages.messages),
    ("GET", "/messages/{topic}/{msg_id}", message_pages.message),
    ("POST", "/messages/{topic}/{msg_id}/resend", message_pages.resend_message),
    ("GET", "/dlq", dlq_pages.dead_letters),
    ("POST", "/dlq/resend", dlq_pages.resend),
    ("GET", "/dlq/export", dlq_pages.export),
)


@web.middleware
async def error_page(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bad input and cluster errors become the page's message, with the status that fits;
    anything else is logged with its trace, and the page names only its type."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except ConsoleInputError as exc:
        return render(request, "error.html", {"message": str(exc)}, status=400)
    except (OrbitError, TimeoutError, OSError) as exc:
        message = str(exc) or type(exc).__name__
        return render(request, "error.html", {"message": message}, status=502)
    except Exception as exc:
        _LOG.exception("console page %s failed", request.path)
        message = f"internal error ({type(exc).__name__}); the console's log has the details"
        return render(request, "error.html", {"message": message}, status=500)


@web.middleware
async def same_origin(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Changes (POST) only from the console's own pages: a form another site submits from
    the operator's browser carries that site's Origin, and changes nothing. (Clients that
    send no Origin, such as curl, are not browsers a page can drive.)"""
    origin = request.headers.get("Origin")
    if request.method != "GET" and origin is not None and URL(origin).raw_authority != request.host:
        message = f"refused: a change from another origin ({origin}) than this console's"
        return render(request, "error.html", {"message": message}, status=403)
    return await handler(request)


#: The login's own routes, served when the console asks for ACL credentials.
LOGIN_ROUTES: Final[tuple[tuple[str, str, Handler], ...]] = (
    ("GET", "/login", login_form),
    ("POST", "/login", login),
    ("POST", "/logout", logout),
)


def console_app(
    admin: AdminClient | None = None, *, sessions: ConsoleSessions | None = None
) -> web.Application:
    """The console over ``admin``, a started AdminClient that the caller owns; or, with
    ``sessions`` instead, one that asks each user to log in and reads through their own
    session's client."""
    if (admin is None) == (sessions is None):
        raise ValueError("console_app: give either an admin client or login sessions")
    # The login comes after the origin check (a forged login form changes nothing) and
    # before the error page (a refused login shows on its own form).
    login_middlewares = [login_required] if sessions is not None else []
    app = web.Application(middlewares=[same_origin, *login_middlewares, error_page])
    routes = ROUTES
    if admin is not None:
        app[ADMIN_KEY] = admin
    if sessions is not None:
        app[SESSIONS_KEY] = sessions
        routes = LOGIN_ROUTES + ROUTES
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    app.router.add_static("/static", _STATIC_DIR)
    return app
