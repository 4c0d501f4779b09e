"""The console as a person uses it, in headless Chromium against a real cluster: every page
loads and runs its script without errors, a topic made in the page exists, a message sent
from Python is found by key with its detail and trace, a group's lag falls on the page
(without a reload) as it consumes, a dead letter is resent, and bad input is a message."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from orbitmq.client import (
    AdminClient,
    ClientConfig,
    ConsumeContext,
    Producer,
    ProducerConfig,
    PushConsumer,
    PushConsumerConfig,
    ResendStatus,
)
from orbitmq.common import Message, MessageExt
from orbitmq.protocol.body import SubscriptionGroupConfig
from tests.browser.conftest import RunningConsole
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(120)

WAIT_S = 20.0
#: A page script may replace an element between finding it and reading its text: read again.
RE_READ = (StaleElementReferenceException,)


def severe_logs(browser: webdriver.Chrome) -> list[dict[str, Any]]:
    """Script errors and failed loads the page logged since the last call."""
    # selenium leaves get_log unannotated.
    logs: list[dict[str, Any]] = browser.get_log("browser")  # type: ignore[no-untyped-call]
    return [e for e in logs if e["level"] == "SEVERE"]


def text(browser: webdriver.Chrome, element_id: str) -> str:
    return str(browser.find_element(By.ID, element_id).text)


def wait_for(browser: webdriver.Chrome, element_id: str, wanted: str) -> None:
    WebDriverWait(browser, WAIT_S, 0.1, ignored_exceptions=RE_READ).until(
        lambda b: wanted in b.find_element(By.ID, element_id).text,
        f"{wanted!r} in #{element_id}",
    )


def wait_for_exactly(browser: webdriver.Chrome, element_id: str, wanted: str) -> None:
    WebDriverWait(browser, WAIT_S, 0.1, ignored_exceptions=RE_READ).until(
        lambda b: b.find_element(By.ID, element_id).text == wanted,
        f"#{element_id} to read {wanted!r}",
    )


def polled(chart: WebElement) -> Callable[[webdriver.Chrome], bool]:
    return lambda _: int(chart.get_attribute("data-polls") or 0) >= 1


def admin_call(console: RunningConsole, name: str, *args: Any, **kwargs: Any) -> Any:
    """One AdminClient call on the cluster's loop, with a client of its own."""

    async def call() -> Any:
        async with AdminClient(namesrv_addr=console.cluster.namesrv_addr) as admin:
            return await getattr(admin, name)(*args, **kwargs)

    return console.cluster.call(call())


def send(
    console: RunningConsole, topic: str, messages: Sequence[Message], trace: bool
) -> list[str]:
    async def run() -> list[str]:
        config = ProducerConfig(enable_trace=trace)
        async with Producer(
            "browser-pg", namesrv_addr=console.cluster.namesrv_addr, config=config
        ) as producer:
            return [(await producer.send(m)).msg_id for m in messages]

    return console.cluster.call(run())


def start_consumer(
    console: RunningConsole, group: str, topic: str, *, fail: bool = False
) -> PushConsumer:
    async def listener(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        if fail:
            raise RuntimeError("downstream is down")

    consumer = PushConsumer(
        group,
        client_config=ClientConfig(
            namesrv_addr=console.cluster.namesrv_addr, persist_consumer_offset_interval_s=0.2
        ),
        config=PushConsumerConfig(enable_trace=True, max_reconsume_times=1),
    )
    consumer.subscribe(topic)
    consumer.register_listener(listener)
    console.cluster.call(consumer.start())
    return consumer


def backlog_group(console: RunningConsole, group: str, topic: str) -> None:
    """A group whose offsets sit at the start of each queue of ``topic`` (an operator's new
    group, reset to the beginning): everything stored is its lag."""

    async def commit_start_offsets() -> None:
        async with AdminClient(namesrv_addr=console.cluster.namesrv_addr) as admin:
            await admin.update_subscription_group(SubscriptionGroupConfig(group_name=group))
            masters = await admin.master_addrs()
            for status in await admin.topic_status(topic):
                await admin.api.update_consumer_offset(
                    masters[status.broker_name], group, status.queue, 0, 3.0
                )

    console.cluster.call(commit_start_offsets())


def keyed(topic: str, body: bytes, key: str) -> Message:
    message = Message(topic, body)
    message.keys = [key]
    message.tags = "TagA"
    return message


def test_every_page_loads_without_script_errors(
    console: RunningConsole, browser: webdriver.Chrome
) -> None:
    admin_call(console, "create_topic", "PageTopic", queue_nums=2)
    [msg_id] = send(console, "PageTopic", [keyed("PageTopic", b"hello", "page-key")], False)
    backlog_group(console, "page-cg", "PageTopic")
    pages = {
        "/": "Cluster",
        "/topics": "Topics",
        "/topics/PageTopic": "Topic PageTopic",
        "/groups": "Consumer groups",
        "/groups/page-cg": "Consumer group page-cg",
        "/producers": "Producers",
        "/messages": "Messages",
        f"/messages/PageTopic/{msg_id}": f"Message {msg_id}",
        "/dlq?group=page-cg": "Dead letters",
    }
    severe_logs(browser)
    for path, heading in pages.items():
        browser.get(console.url(path))
        assert browser.find_element(By.TAG_NAME, "h1").text == heading, path
        charts = browser.find_elements(By.CSS_SELECTOR, "canvas.chart")
        for chart in charts:  # the script ran and its first poll drew the chart
            WebDriverWait(browser, WAIT_S, 0.1).until(polled(chart), f"chart on {path}")
            assert "stale" not in (chart.get_attribute("class") or ""), path
        assert severe_logs(browser) == [], path
    browser.get(console.url("/"))
    assert "broker-a" in text(browser, "brokers")
    assert "MASTER" in text(browser, "brokers")


def test_a_topic_created_in_the_page_appears(
    console: RunningConsole, browser: webdriver.Chrome
) -> None:
    browser.get(console.url("/topics"))
    browser.find_element(By.ID, "new-topic").send_keys("MadeInPage")
    queue_nums = browser.find_element(By.ID, "queue-nums")
    queue_nums.clear()
    queue_nums.send_keys("3")
    browser.find_element(By.ID, "create-topic-button").click()
    wait_for(browser, "notice", "topic MadeInPage saved on broker-a")
    assert text(browser, "topic-name") == "MadeInPage"
    assert len(browser.find_elements(By.CSS_SELECTOR, "#queues tr")) == 1 + 3
    browser.get(console.url("/topics?filter=madein"))
    assert text(browser, "topics") == "Topic\nMadeInPage"
    assert "MadeInPage" in admin_call(console, "list_topics")
    browser.get(console.url("/topics/MadeInPage"))
    browser.find_element(By.ID, "delete-topic").click()
    browser.switch_to.alert.accept()
    wait_for(browser, "notice", "topic MadeInPage deleted")
    assert "MadeInPage" not in admin_call(console, "list_topics")


def test_a_message_sent_from_python_is_found_by_key_with_detail_and_trace(
    console: RunningConsole, browser: webdriver.Chrome
) -> None:
    admin_call(console, "create_topic", "Orders", queue_nums=2)
    consumer = start_consumer(console, "orders-cg", "Orders")
    try:
        [msg_id] = send(console, "Orders", [keyed("Orders", b'{"order": 42}', "order-42")], True)
        browser.get(console.url("/messages"))
        browser.find_element(By.ID, "key-topic").send_keys("Orders")
        browser.find_element(By.ID, "key-key").send_keys("order-42")
        browser.find_element(By.ID, "search-key-button").click()
        wait_for(browser, "found", msg_id)
        browser.get(console.url("/messages?by=topic&topic=Orders"))  # stored in the last hour
        wait_for(browser, "found", msg_id)
        browser.find_element(By.LINK_TEXT, msg_id).click()
        wait_for(browser, "msg-id", msg_id)
        assert text(browser, "body-text") == '{"order": 42}'
        assert "KEYS order-42" in text(browser, "properties")
        browser.find_element(By.CSS_SELECTOR, "button[data-tab=body-json]").click()
        assert '"order": 42' in text(browser, "body-json")
        assert not browser.find_element(By.ID, "body-text").is_displayed()

        def traced() -> bool | None:  # trace records are sent in the background
            browser.refresh()
            shown = text(browser, "trace")
            return True if "send · browser-pg" in shown and "consume · orders-cg" in shown else None

        eventually(traced, WAIT_S, 0.5, what="send and consume rows in the trace timeline")
        assert len(browser.find_elements(By.CSS_SELECTOR, "#trace .trace-bar")) >= 2
        # Resent to the group's online consumer, which runs its listener on it again.
        browser.find_element(By.ID, "resend-button").click()
        wait_for(browser, "notice", "orders-cg / ")
        assert text(browser, "notice").endswith("consumed it again: CR_SUCCESS")
        assert severe_logs(browser) == []
    finally:
        console.cluster.call(consumer.shutdown())


def test_a_group_lag_goes_down_on_the_page_after_consuming(
    console: RunningConsole, browser: webdriver.Chrome
) -> None:
    admin_call(console, "create_topic", "Backlog", queue_nums=2)
    send(console, "Backlog", [keyed("Backlog", b"m%d" % i, f"b{i}") for i in range(10)], False)
    backlog_group(console, "backlog-cg", "Backlog")
    browser.get(console.url("/groups/backlog-cg"))
    assert text(browser, "total-lag") == "10"
    assert "Backlog" in text(browser, "progress")
    consumer = start_consumer(console, "backlog-cg", "Backlog")
    try:
        # No reload: the page's live poll brings the lag down.
        wait_for_exactly(browser, "total-lag", "0")
        browser.refresh()
        assert text(browser, "total-lag") == "0"
        assert consumer.group in text(browser, "group-name")
        assert "Backlog" in text(browser, "subscriptions")
    finally:
        console.cluster.call(consumer.shutdown())
    # Reset by time to before the first message: all ten are lag again.
    form = browser.find_element(By.ID, "reset-offsets")
    form.find_element(By.NAME, "topic").send_keys("Backlog")
    browser.execute_script(
        "arguments[0].value = '2000-01-01T00:00:00'", form.find_element(By.NAME, "time")
    )
    form.find_element(By.TAG_NAME, "button").click()
    wait_for(browser, "notice", "reset 2 queues of Backlog")
    assert text(browser, "total-lag") == "10"
    browser.find_element(By.ID, "delete-group").click()
    browser.switch_to.alert.accept()
    wait_for(browser, "notice", "consumer group backlog-cg deleted")
    assert "backlog-cg" not in text(browser, "groups")


def test_a_dead_letter_is_resent_from_the_page(
    console: RunningConsole, browser: webdriver.Chrome
) -> None:
    admin_call(console, "create_topic", "Payments", queue_nums=1)
    consumer = start_consumer(console, "payments-cg", "Payments", fail=True)
    try:
        [sent] = send(console, "Payments", [keyed("Payments", b"pay", "pay-1")], False)

        def dead() -> bool | None:
            return True if admin_call(console, "dead_letters", "payments-cg") else None

        eventually(dead, 60, 0.3, what="a dead letter of payments-cg")
    finally:
        console.cluster.call(consumer.shutdown())
    browser.get(console.url("/dlq"))
    browser.find_element(By.ID, "dlq-group").send_keys("payments-cg")
    browser.find_element(By.ID, "dlq-list").click()
    wait_for(browser, "dead-letters", "Payments")
    assert "pay-1" in text(browser, "dead-letters")
    browser.find_element(By.CSS_SELECTOR, "#dead-letters input[type=checkbox]").click()
    browser.find_element(By.ID, "dlq-resend-button").click()
    wait_for(browser, "notice", ": sent")
    found = admin_call(console, "query_messages_by_key", "Payments", "pay-1")
    assert len(found) == 2  # the original and its resend
    assert {m.unique_key for m in found} > {sent}
    browser.find_element(By.ID, "dlq-resend-button").click()
    wait_for(browser, "notice", ResendStatus.ALREADY_RESENT.value)
    export_url = browser.find_element(By.ID, "dlq-export").get_attribute("href")
    with urllib.request.urlopen(str(export_url), timeout=10) as response:
        [line] = response.read().decode().splitlines()
    exported = json.loads(line)
    assert (exported["originalTopic"], exported["keys"]) == ("Payments", ["pay-1"])


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/topics/NoSuchTopic", "NoSuchTopic"),
        ("/messages?by=topic&topic=Orders&begin=yesterday", "begin: 'yesterday' is not a time"),
        (
            "/messages?by=topic&topic=Orders&begin=2026-12-08T00:00&end=2026-12-07T00:00",
            "is after end",
        ),
        ("/messages?by=key&topic=bad%20topic&key=k", "topic:"),
        ("/groups/nobody-cg", "nobody-cg"),
        ("/dlq?group=payments-cg&limit=zero", "limit: 'zero' is not a whole number"),
    ],
)
def test_bad_input_is_a_message_on_the_page(
    console: RunningConsole, browser: webdriver.Chrome, path: str, message: str
) -> None:
    browser.get(console.url(path))
    assert browser.find_element(By.TAG_NAME, "h1").text == "That did not work"
    assert message in text(browser, "error")
    assert "Traceback" not in browser.page_source


def test_a_broker_down_is_a_message_on_the_cluster_page(
    console: RunningConsole, browser: webdriver.Chrome
) -> None:
    # Last in the module: the broker stops serving clients while it stays registered.
    controller = console.cluster.cluster.brokers[0]
    console.cluster.call(console.cluster.cluster.stop_serving(controller))
    started = time.monotonic()
    browser.get(console.url("/"))
    assert "unreachable" in text(browser, "brokers")
    assert time.monotonic() - started < 15
