"""The console of a cluster with aclEnable=true in headless Chromium: the login form comes
first, a wrong secret is refused with the broker's message, the right one opens the pages,
an admin-only change by a non-admin account shows the broker's refusal, and logging out
sends the browser back to the form."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.expected_conditions import staleness_of
from selenium.webdriver.support.ui import WebDriverWait

from orbitmq.console import ConsoleServer
from orbitmq.testing import ThreadedCluster
from tests.browser.test_console_pages import WAIT_S, severe_logs, text

pytestmark = pytest.mark.timeout(120)

PLAIN_ACL_YML = """\
accounts:
  - accessKey: viewer1
    secretKey: viewer-secret-123
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
"""


@pytest.fixture(scope="module")
def acl_console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleServer]:
    root = tmp_path_factory.mktemp("console-acl")
    (root / "home" / "conf").mkdir(parents=True)
    (root / "home" / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    settings = {"acl_enable": True, "rocketmq_home": str(root / "home")}
    with ThreadedCluster(Path(root / "cluster"), broker_settings=settings) as cluster:
        server = ConsoleServer(namesrv_addr=cluster.namesrv_addr, port=0, acl=True)
        cluster.call(server.start())
        try:
            yield server
        finally:
            cluster.call(server.stop())


def submit(browser: webdriver.Chrome, button_id: str) -> None:
    """Click a form's button and wait for the page that answers it: a click returns before
    the POST's answer has replaced the page."""
    page = browser.find_element(By.TAG_NAME, "html")
    browser.find_element(By.ID, button_id).click()
    WebDriverWait(browser, WAIT_S, 0.1).until(staleness_of(page), f"the answer to #{button_id}")


def log_in(browser: webdriver.Chrome, access_key: str, secret_key: str) -> None:
    browser.find_element(By.ID, "access_key").clear()
    browser.find_element(By.ID, "access_key").send_keys(access_key)
    browser.find_element(By.ID, "secret_key").send_keys(secret_key)
    submit(browser, "login")


def test_login_refusal_pages_admin_refusal_and_logout(
    browser: webdriver.Chrome, acl_console: ConsoleServer
) -> None:
    base = acl_console.url.rstrip("/")
    browser.get(base + "/topics")
    assert browser.current_url == base + "/login?next=/topics"
    assert browser.find_element(By.ID, "login-form").is_displayed()

    log_in(browser, "viewer1", "not-the-secret")
    assert "Check signature failed for accessKey=viewer1" in text(browser, "error")
    assert "not-the-secret" not in browser.page_source

    severe_logs(browser)  # the refused login's status is logged; only what follows counts
    log_in(browser, "viewer1", "viewer-secret-123")
    assert browser.current_url == base + "/topics"
    assert text(browser, "user") == "viewer1"
    assert browser.get_cookie("orbitmq_console_session") is not None
    cookie = browser.get_cookie("orbitmq_console_session") or {}
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Strict"
    for path in ("/", "/groups", "/messages"):
        browser.get(base + path)
        assert text(browser, "user") == "viewer1"
    assert severe_logs(browser) == []

    browser.get(base + "/topics")
    browser.find_element(By.ID, "new-topic").send_keys("ViewerTopic")
    submit(browser, "create-topic-button")
    refusal = text(browser, "error")
    assert "Need admin permission for request code=17, but accessKey=viewer1 is not" in refusal

    browser.get(base + "/")
    submit(browser, "logout")
    assert browser.current_url == base + "/login?notice=logged+out"
    assert text(browser, "notice") == "logged out"
    browser.get(base + "/groups")
    assert browser.current_url == base + "/login?next=/groups"
