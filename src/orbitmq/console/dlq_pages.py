"""The dead letter page: a group's dead letters (``%DLQ%<group>``), resending some or all
of them to their original topics, and exporting them as JSON lines."""

from __future__ import annotations

import json

from aiohttp import web

from orbitmq.console.inputs import integer, required
from orbitmq.console.page import admin_of, form, redirect, render


async def dead_letters(request: web.Request) -> web.Response:
    group = request.query.get("group", "").strip()
    letters = []
    if group:
        limit = integer(request.query, "limit", 256, 1, 10_000)
        letters = await admin_of(request).dead_letters(group, limit=limit)
    return render(request, "dlq.html", {"group": group, "letters": letters})


async def resend(request: web.Request) -> web.Response:
    posted = await request.post()
    group = required(await form(request), "group")
    ids = [v for v in posted.getall("msg_id", []) if isinstance(v, str)]
    results = await admin_of(request).resend_dead_letters(group, ids or None)
    summary = ", ".join(f"{r.msg_id}: {r.status.value}" for r in results) or "nothing to resend"
    raise redirect(f"/dlq?group={group}", f"resend: {summary}")


async def export(request: web.Request) -> web.StreamResponse:
    """Every dead letter of the group, one JSON object a line, as a download."""
    group = required(request.query, "group")
    letters = await admin_of(request).dead_letters(group, limit=1_000_000)
    lines = (
        json.dumps(
            {
                "msgId": d.msg_id,
                "brokerName": d.queue.broker_name,
                "queueOffset": d.queue_offset,
                "originalTopic": d.original_topic,
                "originalMsgId": d.original_msg_id,
                "uniqueKey": d.unique_key,
                "keys": list(d.keys),
                "tags": d.tags,
                "reconsumeTimes": d.reconsume_times,
                "storeTimestamp": d.store_timestamp_ms,
                "bodySize": d.body_size,
            }
        )
        for d in letters
    )
    return web.Response(
        text="".join(line + "\n" for line in lines),
        content_type="application/x-ndjson",
        headers={"Content-Disposition": f'attachment; filename="dlq-{group}.jsonl"'},
    )
