"""The console over HTTP without a browser (a real cluster, real sockets): changes only from
its own origin, errors as pages with fitting statuses, the charts' JSON, the dead letter
export."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from orbitmq.client import Producer
from orbitmq.common import Message
from orbitmq.console import ConsoleServer
from orbitmq.testing import InProcessCluster


@pytest.fixture
async def console(cluster: InProcessCluster) -> AsyncIterator[ConsoleServer]:
    async with ConsoleServer(namesrv_addr=cluster.namesrv_addr, port=0) as server:
        yield server


async def test_a_change_from_another_origin_is_refused(console: ConsoleServer) -> None:
    form = {"topic": "CrossSite", "queue_nums": "2"}
    async with aiohttp.ClientSession() as http:
        async with http.post(
            console.url + "topics", data=form, headers={"Origin": "http://evil.example"}
        ) as refused:
            assert refused.status == 403
            assert "refused: a change from another origin (http://evil.example)" in (
                await refused.text()
            )
        assert "CrossSite" not in await console.admin.list_topics()
        own = console.url.rstrip("/")
        async with http.post(
            console.url + "topics", data=form, headers={"Origin": own}, allow_redirects=False
        ) as done:
            assert done.status == 303
            assert done.headers["Location"].startswith("/topics/CrossSite?notice=")
    assert "CrossSite" in await console.admin.list_topics()


@pytest.mark.parametrize(
    ("path", "status", "message"),
    [
        ("topics/NoSuchTopic", 502, "NoSuchTopic"),
        ("messages?by=topic&topic=T&end=tomorrow", 400, "end: &#39;tomorrow&#39; is not a time"),
        ("messages?by=color&topic=T", 400, "by: &#39;color&#39; is not one of topic, key, id"),
        ("producers?group=pg", 400, "topic: required"),
        ("dlq/export", 400, "group: required"),
    ],
)
async def test_errors_are_pages_with_a_message(
    console: ConsoleServer, path: str, status: int, message: str
) -> None:
    async with aiohttp.ClientSession() as http, http.get(console.url + path) as response:
        page = await response.text()
    assert response.status == status
    assert response.content_type == "text/html"
    assert message in page
    assert "Traceback" not in page


async def test_the_charts_read_json_series(console: ConsoleServer) -> None:
    await console.admin.create_topic("Charted", queue_nums=1)
    async with aiohttp.ClientSession() as http:
        async with http.get(console.url + "api/cluster/stats") as response:
            cluster = await response.json()
        async with http.get(console.url + "api/topics/Charted/stats") as response:
            topic = await response.json()
        async with http.get(console.url + "api/groups/nobody/stats") as response:
            group = await response.json()
    assert set(cluster["series"]) == {"broker-a put", "broker-a get"}
    assert topic["series"] == {"Charted put/s": 0.0}
    assert group["series"] == {"lag": 0, "consume/s": 0.0}
    assert cluster["time_ms"] > 0


async def test_an_export_of_no_dead_letters_is_empty(console: ConsoleServer) -> None:
    url = console.url + "dlq/export?group=quiet-cg"
    async with aiohttp.ClientSession() as http, http.get(url) as response:
        assert response.status == 200
        assert response.content_type == "application/x-ndjson"
        assert 'filename="dlq-quiet-cg.jsonl"' in response.headers["Content-Disposition"]
        assert await response.text() == ""


async def test_producers_by_group_and_a_message_by_id(
    console: ConsoleServer, cluster: InProcessCluster
) -> None:
    await console.admin.create_topic("Shipped", queue_nums=1)
    async with Producer("shipping-pg", namesrv_addr=cluster.namesrv_addr) as producer:
        sent = await producer.send(Message("Shipped", b"parcel"))
        # The periodic heartbeat, now: it registers the producer at the broker it sent to.
        await producer.instance.send_heartbeat_to_all_brokers()
        async with aiohttp.ClientSession() as http:
            url = console.url + "producers?group=shipping-pg&topic=Shipped"
            async with http.get(url) as response:
                page = await response.text()
            assert response.status == 200, page
            assert producer.instance.client_id in page
            url = console.url + f"messages?by=id&topic=Shipped&msg_id={sent.msg_id}"
            async with http.get(url) as response:
                page = await response.text()
    assert response.status == 200
    assert response.url.path == f"/messages/Shipped/{sent.msg_id}"
    assert '<pre id="body-text" class="tab">parcel</pre>' in page


async def test_the_topic_page_shows_the_message_type(console: ConsoleServer) -> None:
    await console.admin.create_topic("ConsoleFifo", queue_nums=1, attributes="+message.type=FIFO")
    await console.admin.create_topic("ConsolePlain", queue_nums=1)
    async with aiohttp.ClientSession() as http:
        async with http.get(console.url + "topics/ConsoleFifo") as response:
            fifo = await response.text()
        async with http.get(console.url + "topics/ConsolePlain") as response:
            plain = await response.text()
    assert '<td class="message-type">FIFO</td>' in fifo
    assert "message.type=FIFO" in fifo
    # No attribute: NORMAL, as RocketMQ 5 reads it.
    assert '<td class="message-type">NORMAL</td>' in plain


async def test_the_create_form_sets_the_message_type(console: ConsoleServer) -> None:
    own = {"Origin": console.url.rstrip("/")}
    async with aiohttp.ClientSession() as http:
        form = {"topic": "ConsoleDelay", "queue_nums": "1", "message_type": "DELAY"}
        async with http.post(console.url + "topics", data=form, headers=own) as done:
            page = await done.text()  # the redirect followed: the topic's page
        assert '<td class="message-type">DELAY</td>' in page
        form["message_type"] = "SOMETIMES"
        async with http.post(console.url + "topics", data=form, headers=own) as refused:
            assert refused.status == 400
            assert "message_type: &#39;SOMETIMES&#39; is not one of NORMAL" in await refused.text()
