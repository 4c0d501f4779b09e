"""The topic pages: the list (with a filter), create/update and delete, one topic's route,
per-queue offsets and consumer groups, a test message, and the put rate its chart polls
(VIEW_BROKER_STATS_DATA, TOPIC_PUT_NUMS)."""

from __future__ import annotations

import contextlib
import time
from typing import Final

from aiohttp import web

from orbitmq.client import AdminClient, MQBrokerError, Producer
from orbitmq.common import Message
from orbitmq.console.inputs import ConsoleInputError, integer, required, topic_name
from orbitmq.console.page import admin_of, form, redirect, render
from orbitmq.protocol.body.broker_stats import TOPIC_PUT_NUMS
from orbitmq.protocol.body.route import MASTER_ID
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE

#: The producer group of messages sent from the console (rocketmq-dashboard's own).
CONSOLE_PRODUCER_GROUP: Final = "CONSOLE_PRODUCER_GROUP"
#: Names of topics the cluster keeps for itself; hidden unless asked for.
_SYSTEM_PREFIXES: Final = ("%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_", "SCHEDULE_TOPIC_")
_SYSTEM_TOPICS: Final = frozenset({"TBW102", "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"})
_PERMS: Final = {"RW": PERM_READ | PERM_WRITE, "R": PERM_READ, "W": PERM_WRITE}
#: What the create form offers for a topic's message.type (MIXED only where the broker
#: allows it: the broker answers otherwise).
MESSAGE_TYPES: Final = ("NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED")


def is_system_topic(topic: str, brokers: set[str]) -> bool:
    # A broker registers a topic named after itself and its cluster (RocketMQ does too).
    return topic.startswith(_SYSTEM_PREFIXES) or topic in _SYSTEM_TOPICS or topic in brokers


async def topics(request: web.Request) -> web.Response:
    admin = admin_of(request)
    info = await admin.cluster_info()
    own = set(info.broker_addr_table) | set(info.cluster_addr_table)
    wanted = request.query.get("filter", "").strip()
    system = request.query.get("system") == "1"
    names = [
        t
        for t in await admin.list_topics()
        if wanted.lower() in t.lower() and (system or not is_system_topic(t, own))
    ]
    return render(
        request,
        "topics.html",
        {"topics": names, "filter": wanted, "system": system, "message_types": MESSAGE_TYPES},
    )


async def create_topic(request: web.Request) -> web.Response:
    fields = await form(request)
    topic = topic_name(fields)
    queue_nums = integer(fields, "queue_nums", 8, 1, 1024)
    perm_text = fields.get("perm", "RW")
    if perm_text not in _PERMS:
        raise ConsoleInputError(f"perm: {perm_text!r} is not one of {', '.join(_PERMS)}")
    message_type = fields.get("message_type", "")
    if message_type and message_type not in MESSAGE_TYPES:
        raise ConsoleInputError(
            f"message_type: {message_type!r} is not one of {', '.join(MESSAGE_TYPES)}"
        )
    brokers = await admin_of(request).create_topic(
        topic,
        queue_nums=queue_nums,
        perm=_PERMS[perm_text],
        # RocketMQ 5's attribute; none given keeps what the topic has.
        attributes=f"+message.type={message_type}" if message_type else None,
    )
    raise redirect(f"/topics/{topic}", f"topic {topic} saved on {', '.join(brokers)}")


async def topic(request: web.Request) -> web.Response:
    admin = admin_of(request)
    name = request.match_info["topic"]
    route = await admin.topic_route(name)  # NoRouteError: an unknown topic
    context = {
        "topic": name,
        "route": route,
        "queues": await admin.topic_status(name),
        # RocketMQ 5's attributes (message.type...) of the topic on each master.
        "configs": await admin.topic_configs(name),
        "groups": await admin.query_topic_consume_by_who(name),
    }
    return render(request, "topic.html", context)


async def delete_topic(request: web.Request) -> web.Response:
    name = request.match_info["topic"]
    await admin_of(request).delete_topic(name)
    raise redirect("/topics", f"topic {name} deleted")


async def send_message(request: web.Request) -> web.Response:
    admin = admin_of(request)
    name = request.match_info["topic"]
    fields = await form(request)
    message = Message(name, required(fields, "body").encode())
    if fields.get("tags", "").strip():
        message.tags = fields["tags"].strip()
    if fields.get("keys", "").strip():
        message.keys = fields["keys"].split()
    async with Producer(CONSOLE_PRODUCER_GROUP, instance=admin.instance) as producer:
        result = await producer.send(message)
    raise redirect(f"/topics/{name}", f"sent: {result.send_status.name}, msg id {result.msg_id}")


async def put_tps(admin: AdminClient, topic: str) -> float:
    """The topic's put rate over the last minute, summed over its masters."""
    total = 0.0
    for addr in (await admin.topic_route(topic)).broker_datas:
        master = addr.broker_addrs.get(MASTER_ID)
        if master is None:
            continue
        # No message put on that broker yet: no counter to read.
        with contextlib.suppress(MQBrokerError):
            total += (await admin.view_stats(master, TOPIC_PUT_NUMS, topic)).stats_minute.tps
    return total


async def topic_stats(request: web.Request) -> web.Response:
    name = request.match_info["topic"]
    tps = await put_tps(admin_of(request), name)
    return web.json_response(
        {"time_ms": time.time_ns() // 1_000_000, "series": {f"{name} put/s": tps}}
    )
