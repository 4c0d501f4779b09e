"""Logging in to a console that asks for ACL credentials: the form, the check (a request
signed with the pair, see ``ConsoleSessions.login``), the session cookie, logging out, and the
middleware that sends every other page to the form until a session exists."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web
from yarl import URL

from orbitmq.console.console_sessions import ConsoleSessions, LoginRefusedError
from orbitmq.console.page import SESSION_KEY, form, render

SESSIONS_KEY: Final = web.AppKey("sessions", ConsoleSessions)
#: The cookie holding a session's token (nothing else: the secret stays on the server).
SESSION_COOKIE: Final = "orbitmq_console_session"
#: Paths served without a session: the form itself and the script and style it uses.
_OPEN_PATHS: Final = ("/login", "/static/")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _safe_next(target: str) -> str:
    # Only a path of this console: a crafted link must not send the user elsewhere.
    return target if target.startswith("/") and not target.startswith("//") else "/"


async def login_form(request: web.Request) -> web.Response:
    context = {"access_key": "", "next": _safe_next(request.query.get("next", "/")), "error": ""}
    return render(request, "login.html", context)


async def login(request: web.Request) -> web.Response:
    fields = await form(request)
    access_key = fields.get("access_key", "").strip()
    secret_key = fields.get("secret_key", "")
    target = _safe_next(fields.get("next", "/"))
    error = "" if access_key and secret_key else "an access key and a secret key are required"
    if not error:
        sessions = request.app[SESSIONS_KEY]
        try:
            token = await sessions.login(access_key, secret_key)
        except LoginRefusedError as exc:
            error = str(exc)
        else:
            # A new login replaces the browser's earlier session, if any.
            await sessions.logout(request.cookies.get(SESSION_COOKIE, ""))
            found = web.HTTPSeeOther(location=target)
            found.set_cookie(
                SESSION_COOKIE,
                token,
                path="/",
                httponly=True,
                samesite="Strict",
                secure=request.secure,
            )
            raise found
    context = {"access_key": access_key, "next": target, "error": error}
    return render(request, "login.html", context, status=401)


async def logout(request: web.Request) -> web.Response:
    token = request.cookies.get(SESSION_COOKIE, "")
    await request.app[SESSIONS_KEY].logout(token)
    done = web.HTTPSeeOther(location=URL("/login").update_query(notice="logged out"))
    done.del_cookie(SESSION_COOKIE, path="/")
    raise done


@web.middleware
async def login_required(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every page but the form needs a live session: pages are sent to the form (and back
    after it), the charts' JSON and changes answer 401."""
    if request.path.startswith(_OPEN_PATHS) or request.path == "/logout":
        return await handler(request)
    session = await request.app[SESSIONS_KEY].session(request.cookies.get(SESSION_COOKIE, ""))
    if session is None:
        if request.method == "GET" and not request.path.startswith("/api/"):
            raise web.HTTPSeeOther(location=URL("/login").update_query(next=request.path_qs))
        raise web.HTTPUnauthorized(text="log in first: the session has ended or never began")
    request[SESSION_KEY] = session
    return await handler(request)
