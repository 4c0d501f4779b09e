"""The console of a cluster with aclEnable=true, over HTTP (a real broker checking real
signatures, real sockets): every page asks for a login, a wrong pair shows the broker's
refusal, a right one gives a session cookie (HttpOnly, SameSite=Strict, no secret) whose pages
read as that account, an admin-only change by a non-admin shows the broker's refusal, and
logging out or an idle session ends it."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from yarl import URL

from orbitmq.client import AdminClient, ClientConfig
from orbitmq.console import ConsoleServer
from orbitmq.testing import InProcessCluster

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

PLAIN_ACL_YML = """\
accounts:
  - accessKey: viewer1
    secretKey: viewer-secret-123
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
  - accessKey: operator1
    secretKey: operator-secret-456
    admin: true
"""
COOKIE = "orbitmq_console_session"


@pytest.fixture
async def acl_cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    (tmp_path / "home" / "conf").mkdir(parents=True)
    (tmp_path / "home" / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    settings = {"acl_enable": True, "rocketmq_home": str(tmp_path / "home")}
    async with InProcessCluster(tmp_path / "cluster", broker_settings=settings) as running:
        yield running


@pytest.fixture
async def console(acl_cluster: InProcessCluster) -> AsyncIterator[ConsoleServer]:
    async with ConsoleServer(namesrv_addr=acl_cluster.namesrv_addr, port=0, acl=True) as server:
        yield server


def http_client() -> aiohttp.ClientSession:
    # unsafe: keep the console's cookies though it is addressed by IP (127.0.0.1).
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def log_in(
    http: aiohttp.ClientSession, console: ConsoleServer, access_key: str, secret_key: str
) -> aiohttp.ClientResponse:
    form = {"access_key": access_key, "secret_key": secret_key, "next": "/topics"}
    async with http.post(console.url + "login", data=form, allow_redirects=False) as response:
        await response.read()
        return response


async def test_every_page_asks_for_a_login_first(console: ConsoleServer) -> None:
    async with http_client() as http:
        async with http.get(console.url + "groups?x=1", allow_redirects=False) as page:
            assert page.status == 303
            assert page.headers["Location"] == "/login?next=/groups?x%3D1"
        async with http.get(console.url + "api/cluster/stats") as chart:
            assert chart.status == 401
        async with http.post(console.url + "topics", data={"topic": "Sneaky"}) as change:
            assert change.status == 401
        async with http.get(console.url + "groups") as form:
            text = await form.text()
    assert form.url.path == "/login"
    assert 'name="secret_key" id="secret_key" type="password"' in text
    assert 'value="/groups"' in text


@pytest.mark.parametrize(
    ("access_key", "secret_key", "refusal"),
    [
        ("viewer1", "not-the-secret", "Check signature failed for accessKey=viewer1"),
        ("nobody", "whatever-secret", "No acl config for nobody"),
    ],
)
async def test_a_wrong_login_shows_the_brokers_refusal(
    console: ConsoleServer, access_key: str, secret_key: str, refusal: str
) -> None:
    async with http_client() as http:
        refused = await log_in(http, console, access_key, secret_key)
        async with http.post(
            console.url + "login", data={"access_key": access_key, "secret_key": secret_key}
        ) as page:
            text = await page.text()
    assert refused.status == 401
    assert COOKIE not in refused.cookies
    assert refusal in text
    assert secret_key not in text
    assert f'value="{access_key}"' in text
    assert console.sessions is not None
    assert len(console.sessions) == 0


async def test_a_login_reads_as_its_account_and_never_shows_the_secret(
    console: ConsoleServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with http_client() as http:
        done = await log_in(http, console, "viewer1", "viewer-secret-123")
        assert done.status == 303
        assert done.headers["Location"] == "/topics"
        cookie = done.cookies[COOKIE]
        assert cookie["httponly"] is True
        assert cookie["samesite"] == "Strict"
        assert "viewer-secret-123" not in done.headers.get("Set-Cookie", "")
        async with http.get(console.url) as cluster_page:
            text = await cluster_page.text()
        assert cluster_page.status == 200
        assert "viewer1" in text
        assert "MASTER" in text
    assert "viewer-secret-123" not in text
    assert "viewer-secret-123" not in caplog.text


async def test_an_admin_change_by_a_non_admin_shows_the_refusal(
    console: ConsoleServer, acl_cluster: InProcessCluster
) -> None:
    form = {"topic": "ViewerTopic", "queue_nums": "2"}
    async with http_client() as viewer, http_client() as operator:
        await log_in(viewer, console, "viewer1", "viewer-secret-123")
        async with viewer.post(console.url + "topics", data=form) as refused:
            text = await refused.text()
        assert refused.status == 502
        assert "Need admin permission for request code=17, but accessKey=viewer1 is not" in text
        await log_in(operator, console, "operator1", "operator-secret-456")
        async with operator.post(console.url + "topics", data=form) as created:
            assert created.status == 200
            assert created.url.path == "/topics/ViewerTopic"
    config = ClientConfig(access_key="operator1", secret_key="operator-secret-456")
    async with AdminClient(namesrv_addr=acl_cluster.namesrv_addr, client_config=config) as admin:
        assert "ViewerTopic" in await admin.list_topics()


async def test_logging_out_and_idling_end_the_session(console: ConsoleServer) -> None:
    assert console.sessions is not None
    async with http_client() as http:
        await log_in(http, console, "viewer1", "viewer-secret-123")
        token = http.cookie_jar.filter_cookies(URL(console.url))[COOKIE].value
        async with http.post(console.url + "logout", allow_redirects=False) as out:
            assert out.status == 303
            assert out.headers["Location"] == "/login?notice=logged+out"
        assert len(console.sessions) == 0
        headers = {"Cookie": f"{COOKIE}={token}"}
        async with (
            http_client() as replay,
            replay.get(console.url, headers=headers, allow_redirects=False) as old,
        ):
            assert old.status == 303

        await log_in(http, console, "viewer1", "viewer-secret-123")
        await log_in(http, console, "viewer1", "viewer-secret-123")
        assert len(console.sessions) == 1  # the second login replaced the first
        console.sessions.idle_s = 0.0
        async with http.get(console.url, allow_redirects=False) as idle:
            assert idle.status == 303
            assert idle.headers["Location"].startswith("/login")
        assert len(console.sessions) == 0
