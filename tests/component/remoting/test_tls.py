"""TLS: the ``ssl`` contexts given to server and client go to asyncio as they are."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import RemotingClient, RemotingConnectError
from tests.component.remoting.conftest import ServerFactory
from tests.component.remoting.support import echo_processor

pytestmark = [
    pytest.mark.timeout(10),
    pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command"),
]


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate and key for 127.0.0.1."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    command = [
        *("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
        *(
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ),
        *("-keyout", str(key), "-out", str(cert)),
    ]
    subprocess.run(
        command,
        check=True,
        capture_output=True,
    )
    return cert, key


async def test_a_request_over_tls(
    server_factory: ServerFactory, certificate: tuple[Path, Path]
) -> None:
    cert, key = certificate
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=str(cert))
    server = await server_factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, echo_processor()),
        ssl=server_context,
    )
    addr = f"127.0.0.1:{server.port}"
    tls_client = RemotingClient(ssl=client_context)
    plain_client = RemotingClient(connect_timeout_s=0.5)
    try:
        response = await tls_client.invoke(
            addr, RemotingCommand.create_request(RequestCode.HEART_BEAT, body=b"secret"), 5
        )
        assert (response.code, response.body) == (ResponseCode.SUCCESS, b"secret")

        # Plain bytes to a TLS port: the handshake fails and the connection is dropped.
        with pytest.raises(RemotingConnectError):
            await plain_client.invoke(addr, RemotingCommand.create_request(34), 5)
    finally:
        await tls_client.close()
        await plain_client.close()
