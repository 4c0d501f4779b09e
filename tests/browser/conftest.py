"""The web console in a real headless Chromium (Debian's chromium and chromedriver, which
`make test` installs): one cluster, one console and one browser for the whole module."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from orbitmq.console import ConsoleServer
from orbitmq.testing import ThreadedCluster

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: Retries a second apart, so that a failing message is a dead letter within seconds.
FAST_RETRIES = {"message_delay_level": " ".join(["1s"] * 18)}


@dataclass(frozen=True, slots=True)
class RunningConsole:
    """The cluster and the console the browser tests look at."""

    cluster: ThreadedCluster
    server: ConsoleServer

    def url(self, path: str) -> str:
        return self.server.url.rstrip("/") + path


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningConsole]:
    root = tmp_path_factory.mktemp("console")
    with ThreadedCluster(
        root / "cluster",
        broker_settings={"trace_topic_enable": True},
        store_settings=FAST_RETRIES,
    ) as cluster:
        server = ConsoleServer(namesrv_addr=cluster.namesrv_addr, port=0)
        cluster.call(server.start())
        try:
            yield RunningConsole(cluster, server)
        finally:
            cluster.call(server.stop())


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    """Debian's Chromium through Debian's chromedriver, both at their paths: nothing is
    downloaded. Its console log is kept so tests can check for script errors."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            pytest.fail(f"{path} is missing: `make browser-runtime` installs chromium")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,1000",
    ):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()
