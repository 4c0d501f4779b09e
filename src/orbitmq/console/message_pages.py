"""The message pages: search by topic and store time range, by key, or by id; one
message's properties, body and trace timeline; handing it to a consumer of a group again
(CONSUME_MESSAGE_DIRECTLY)."""

from __future__ import annotations

from typing import Final

from aiohttp import web

from orbitmq.client import AdminClient, MQClientError, QueueReader, ScanRange, scan_messages
from orbitmq.common import MessageExt
from orbitmq.console.inputs import ConsoleInputError, integer, required, time_range, topic_name
from orbitmq.console.message_view import body_views, timeline
from orbitmq.console.page import admin_of, form, redirect, render

#: A time range search without one: the last hour (rocketmq-dashboard's default).
DEFAULT_SPAN_MS: Final = 3_600_000
_MODES: Final = ("topic", "key", "id")


async def _by_time(
    admin: AdminClient, topic: str, begin: int, end: int, limit: int
) -> list[MessageExt]:
    async with QueueReader(client_config=admin.config) as reader:
        scan = ScanRange(begin_ms=begin, end_ms=end)
        return [m async for m in scan_messages(reader, topic, scan, limit)]


async def messages(request: web.Request) -> web.Response:
    query = request.query
    mode = query.get("by", "")
    context: dict[str, object] = {"by": mode or "key", "query": query, "found": None}
    if not mode:
        return render(request, "messages.html", context)
    if mode not in _MODES:
        raise ConsoleInputError(f"by: {mode!r} is not one of {', '.join(_MODES)}")
    admin = admin_of(request)
    topic = topic_name(query)
    limit = integer(query, "limit", 64, 1, 2048)
    if mode == "id":
        raise web.HTTPSeeOther(f"/messages/{topic}/{required(query, 'msg_id')}")
    if mode == "key":
        found = await admin.query_messages_by_key(topic, required(query, "key"), limit)
    else:
        begin, end = time_range(query, DEFAULT_SPAN_MS)
        await admin.topic_route(topic)  # an unknown topic is named as such
        found = await _by_time(admin, topic, begin, end, limit)
    context["found"] = found
    return render(request, "messages.html", context)


async def message(request: web.Request) -> web.Response:
    admin = admin_of(request)
    topic, msg_id = request.match_info["topic"], request.match_info["msg_id"]
    msg = await admin.view_message(msg_id, topic)
    trace_id = msg.unique_key or msg.msg_id
    try:
        trace = await admin.query_msg_trace_by_id(trace_id)
        bars = timeline(trace)
    except MQClientError:
        bars = []  # no trace topic in this cluster: nothing traced
    clients: list[tuple[str, str]] = []
    for group in await admin.query_topic_consume_by_who(topic):
        clients.extend((group, c) for c in await admin.consumer_ids(group, topic))
    context = {
        "topic": topic,
        "msg_id": msg_id,
        "msg": msg,
        "body": body_views(msg.body),
        "timeline": bars,
        "clients": clients,
    }
    return render(request, "message.html", context)


async def resend_message(request: web.Request) -> web.Response:
    admin = admin_of(request)
    topic, msg_id = request.match_info["topic"], request.match_info["msg_id"]
    fields = await form(request)
    group, _, client_id = required(fields, "client").partition(" ")
    if not client_id:
        raise ConsoleInputError("client: expected '<group> <client id>'")
    result = await admin.consume_message_directly(group, client_id, msg_id, topic)
    outcome = result.consume_result.name if result.consume_result else "no result"
    raise redirect(
        f"/messages/{topic}/{msg_id}", f"{group} / {client_id} consumed it again: {outcome}"
    )
