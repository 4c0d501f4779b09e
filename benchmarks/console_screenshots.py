"""Screenshots of the web console's main pages for ``docs/console.md``.

    .venv/bin/python benchmarks/console_screenshots.py [--out docs/console] [--login-only]

Run from the repository root, with Debian's chromium and chromium-driver installed (`make
browser-runtime`). A name server and a broker run in this process on loopback with a
temporary store; a producer and consumers with trace on give the pages something to show
(a topic with traffic, a group with lag, a traced message, a dead letter); then headless
Chromium, through Debian's chromedriver, saves one PNG per page into ``--out``. A second
cluster with aclEnable=true gives the login pages (``--login-only``: those alone).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

from orbitmq.client import (
    AdminClient,
    ClientConfig,
    ConsumeContext,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
)
from orbitmq.common import Message, MessageExt
from orbitmq.console import ConsoleServer
from orbitmq.protocol.body import SubscriptionGroupConfig
from orbitmq.testing import ThreadedCluster

FAST_RETRIES = {"message_delay_level": " ".join(["1s"] * 18)}
PLAIN_ACL_YML = "accounts:\n  - accessKey: viewer1\n    secretKey: viewer-secret-123\n"


async def traffic(namesrv: str) -> str:
    """Topics, messages, a consuming group, a group with lag and a dead letter; the unique
    id of a traced, consumed message."""
    client = ClientConfig(namesrv_addr=namesrv, persist_consumer_offset_interval_s=0.2)
    async with AdminClient(namesrv_addr=namesrv) as admin:
        for topic in ("Orders", "Payments"):
            await admin.create_topic(topic, queue_nums=4)
        await admin.update_subscription_group(SubscriptionGroupConfig(group_name="audit-cg"))
        masters = await admin.master_addrs()
        for status in await admin.topic_status("Orders"):
            await admin.api.update_consumer_offset(
                masters[status.broker_name], "audit-cg", status.queue, 0, 3.0
            )

    async def ok(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        return None

    async def fail(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        raise RuntimeError("payment service down")

    consumers = []
    for group, topic, listener in (("orders-cg", "Orders", ok), ("payments-cg", "Payments", fail)):
        consumer = PushConsumer(
            group,
            client_config=client,
            config=PushConsumerConfig(enable_trace=True, max_reconsume_times=1),
        )
        consumer.subscribe(topic)
        consumer.register_listener(listener)
        await consumer.start()
        consumers.append(consumer)
    config = ProducerConfig(enable_trace=True)
    async with Producer("orders-pg", namesrv_addr=namesrv, config=config) as producer:
        traced = ""
        for i in range(40):
            msg = Message("Orders", b'{"order": %d, "amount": %d.50}' % (i, 10 + i))
            msg.keys = [f"order-{i}"]
            msg.tags = "Created"
            result = await producer.send(msg)
            traced = traced or result.msg_id
            await asyncio.sleep(0.05)
        pay = Message("Payments", b'{"order": 7, "card": "declined"}')
        pay.keys = ["pay-7"]
        await producer.send(pay)
    await asyncio.sleep(6)  # retries run out, the trace records land
    for consumer in consumers:
        await consumer.shutdown()
    return traced


def chromium() -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in ("--headless=new", "--no-sandbox", "--window-size=1280,900"):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def login_screenshots(out: Path) -> None:
    """The login form refusing a wrong secret, and a non-admin account's refused change."""
    with tempfile.TemporaryDirectory() as root:
        home = Path(root) / "home"
        (home / "conf").mkdir(parents=True)
        (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
        settings = {"acl_enable": True, "rocketmq_home": str(home)}
        with ThreadedCluster(Path(root) / "cluster", broker_settings=settings) as cluster:
            server = ConsoleServer(namesrv_addr=cluster.namesrv_addr, port=0, acl=True)
            cluster.call(server.start())
            browser = chromium()
            try:
                browser.get(server.url.rstrip("/") + "/topics")
                for secret in ("wrong", "viewer-secret-123"):
                    browser.find_element(By.ID, "access_key").clear()
                    browser.find_element(By.ID, "access_key").send_keys("viewer1")
                    browser.find_element(By.ID, "secret_key").send_keys(secret)
                    browser.find_element(By.ID, "login").click()
                    if secret == "wrong":
                        browser.save_screenshot(str(out / "login.png"))
                browser.find_element(By.ID, "new-topic").send_keys("ViewerTopic")
                browser.find_element(By.ID, "create-topic-button").click()
                browser.save_screenshot(str(out / "login-refused-change.png"))
                print("login          /login (a wrong secret), /topics (a refused change)")
            finally:
                browser.quit()
                cluster.call(server.stop())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("docs/console"))
    parser.add_argument("--login-only", action="store_true", help="only the login pages")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.login_only:
        all_pages(args.out)
    login_screenshots(args.out)


def all_pages(out: Path) -> None:
    with (
        tempfile.TemporaryDirectory() as root,
        ThreadedCluster(
            Path(root) / "cluster",
            broker_settings={"trace_topic_enable": True},
            store_settings=FAST_RETRIES,
        ) as cluster,
    ):
        traced = cluster.call(traffic(cluster.namesrv_addr))
        server = ConsoleServer(namesrv_addr=cluster.namesrv_addr, port=0)
        cluster.call(server.start())
        browser = chromium()
        pages = {
            "cluster": "/",
            "topics": "/topics",
            "topic": "/topics/Orders",
            "groups": "/groups",
            "group": "/groups/audit-cg",
            "messages": "/messages?by=key&topic=Orders&key=order-3",
            "message": f"/messages/Orders/{traced}",
            "dead-letters": "/dlq?group=payments-cg",
            "error": "/messages?by=topic&topic=Orders&begin=yesterday",
        }
        try:
            for name, path in pages.items():
                browser.get(server.url.rstrip("/") + path)
                browser.execute_script("return new Promise(r => setTimeout(r, 4500))")
                browser.save_screenshot(str(out / f"{name}.png"))
                print(f"{name:14} {path}")
        finally:
            browser.quit()
            cluster.call(server.stop())


if __name__ == "__main__":
    main()
