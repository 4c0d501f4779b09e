"""The console's login from the command line (issue 18 §1/§2): ``orbitmq start`` with
aclEnable=true serves a console that asks for a login (consoleAclEnable follows aclEnable),
and ``orbitmq console --acl`` does the same alone. Real processes, real HTTP."""

from __future__ import annotations

import http.cookiejar
import re
import signal
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

from tests.eventually import eventually
from tests.support import SMALL_STORE_CONF, start_orbitmq

CONSOLE_READY = re.compile(r"OrbitMQ console ready on (\S+) ")
PLAIN_ACL_YML = "accounts:\n  - accessKey: viewer1\n    secretKey: viewer-secret-123\n"


def browser() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(
        urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
    )


def page(
    opener: urllib.request.OpenerDirector, url: str, form: dict[str, str] | None = None
) -> str:
    data = urllib.parse.urlencode(form).encode() if form is not None else None
    with opener.open(url, data=data, timeout=10) as response:
        return str(response.read().decode())


def logs_in(console_url: str) -> None:
    """The console sends a new visitor to the form; the right pair opens the cluster page."""
    opener = browser()
    assert 'id="login-form"' in page(opener, console_url)
    form = {"access_key": "viewer1", "secret_key": "viewer-secret-123", "next": "/"}
    cluster = page(opener, console_url + "login", form)
    assert "<h1>Cluster</h1>" in cluster and "MASTER" in cluster


def stop(process: subprocess.Popen[bytes], err: Path) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=15) == 0, err.read_text()


def test_start_with_acl_and_console_acl_ask_for_a_login(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    config = tmp_path / "broker.conf"
    config.write_text(SMALL_STORE_CONF + f"aclEnable=true\nrocketmqHome={home}\n")
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "orbitmq", config)
    standalone: subprocess.Popen[bytes] | None = None
    try:
        logs_in(ready.group(6))
        out = tmp_path / "console.out"
        command = ["console", "-n", ready.group(1), "--port", "0", "--acl"]
        with out.open("wb") as out_file, (tmp_path / "console.err").open("wb") as err_file:
            standalone = subprocess.Popen(
                [sys.executable, "-m", "orbitmq.cli", *command], stdout=out_file, stderr=err_file
            )

        def console_ready() -> re.Match[str] | None:
            return next(filter(None, map(CONSOLE_READY.match, out.read_text().splitlines())), None)

        logs_in(eventually(console_ready, 10, what="the console's ready line").group(1))
        stop(standalone, tmp_path / "console.err")
        stop(process, tmp_path / "orbitmq.err")
    finally:
        for p in (standalone, process):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
