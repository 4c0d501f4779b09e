"""TLS from the command line, in real processes: ``orbitmq start`` with tls.server.mode=
enforcing in its broker.conf (the broker registers with its name server over TLS too, and
its console reads the cluster over TLS: tls.enable, and serves HTTPS: consoleCertPath),
``orbitmq send`` / ``consume`` / ``console`` with ``--tls`` and a tls.properties, and a plain
command refused with one clear line while the server logs why."""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.eventually import eventually
from tests.support import SMALL_STORE_CONF, run_orbitmq, start_orbitmq
from tests.tls_certs import SERVER_KEY_PASSWORD, make_pki

pytestmark = pytest.mark.timeout(90)

CONSOLE_READY = re.compile(r"OrbitMQ console ready on (\S+) \(name servers (\S+)\)$")


@pytest.fixture
def enforcing_start(tmp_path: Path) -> Iterator[tuple[str, Path, Path, str]]:
    """A running ``orbitmq start`` in enforcing mode: (name server address, the client's
    tls.properties, the server's log file, its console's URL)."""
    pki = make_pki(tmp_path)
    server_keys = {
        **pki.server_properties("enforcing"),
        **pki.client_properties(),
        "consoleCertPath": str(pki.server_cert),
        "consoleKeyPath": str(pki.server_key),
        "consoleKeyPassword": SERVER_KEY_PASSWORD,
    }
    config = tmp_path / "broker.conf"
    config.write_text(SMALL_STORE_CONF + "".join(f"{k}={v}\n" for k, v in server_keys.items()))
    client_file = tmp_path / "tls.properties"
    client_file.write_text("".join(f"{k}={v}\n" for k, v in pki.client_properties().items()))
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "start", config)
    try:
        yield ready[1], client_file, tmp_path / "start.err", ready[6]
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def get(url: str, ca: Path) -> str:
    """The page at ``url``, over HTTPS checked against ``ca``."""
    assert url.startswith("https://127.0.0.1:"), url
    context = ssl.create_default_context(cafile=str(ca))
    with urllib.request.urlopen(url, timeout=10, context=context) as response:
        return str(response.read().decode())


def test_send_and_consume_over_tls_and_plain_refused(
    enforcing_start: tuple[str, Path, Path, str],
) -> None:
    namesrv, client_file, server_log, _ = enforcing_start
    tls = ("-n", namesrv, "--tls", "--tls-config-file", str(client_file), "--json")
    sent = run_orbitmq("send", "-t", "TlsTopic", "over tls", *tls)
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["sendStatus"] == "SEND_OK"
    consumed = run_orbitmq(
        "consume", "-t", "TlsTopic", "-g", "TlsGroup", "--from", "first", "--count", "1", *tls
    )
    assert consumed.returncode == 0, consumed.stderr
    assert json.loads(consumed.stdout.splitlines()[0])["body"] == "over tls"

    plain = run_orbitmq("send", "-t", "TlsTopic", "in clear", "-n", namesrv)
    assert plain.returncode == 1
    lines = plain.stderr.strip().splitlines()
    assert len(lines) == 1, plain.stderr
    assert "closed before answering anything" in lines[0]
    assert "tls.server.mode=enforcing" in lines[0]
    assert "refused a plain connection" in server_log.read_text()


def test_the_consoles_read_the_cluster_over_tls_and_serve_https(
    enforcing_start: tuple[str, Path, Path, str], tmp_path: Path
) -> None:
    namesrv, client_file, _, console_url = enforcing_start
    ca = client_file.parent / "ca.pem"
    assert "broker-a" in get(console_url, ca)  # orbitmq start's console: tls.enable in the file

    out, err = tmp_path / "console.out", tmp_path / "console.err"
    command = [sys.executable, "-m", "orbitmq.cli", "console", "-n", namesrv, "--port", "0"]
    tls = ["--tls", "--tls-config-file", str(client_file)]
    https = ["--cert", str(ca.parent / "server.pem"), "--key", str(ca.parent / "server.key")]
    https += ["--key-password", SERVER_KEY_PASSWORD]
    with out.open("wb") as out_file, err.open("wb") as err_file:
        standalone = subprocess.Popen([*command, *tls, *https], stdout=out_file, stderr=err_file)
    try:

        def ready() -> re.Match[str] | None:
            return next(filter(None, map(CONSOLE_READY.match, out.read_text().splitlines())), None)

        url = eventually(ready, 15, what="the console's ready line").group(1)
        assert "broker-a" in get(url, ca)
    finally:
        standalone.terminate()
        standalone.wait(timeout=15)
