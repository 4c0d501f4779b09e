"""TLS on the remoting port (RocketMQ's tls.server.mode, on asyncio's loop and uvloop), with
real certificates made in the test: enforcing refuses plain connections, permissive takes
both on one port, disabled refuses TLS, and a client whose certificate the server does not
trust is refused when client auth is required."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.remoting import (
    RemotingClient,
    RemotingConnectError,
    RemotingError,
    RemotingServer,
    TlsMode,
    TlsSystemConfig,
)
from orbitmq.remoting.blocking_channel import BlockingChannel
from tests.component.remoting.conftest import ServerFactory
from tests.component.remoting.support import echo_processor
from tests.tls_certs import Pki, make_pki

pytestmark = pytest.mark.timeout(20)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture
async def clients() -> AsyncIterator[list[RemotingClient]]:
    made: list[RemotingClient] = []
    yield made
    for client in made:
        await client.close()


async def start_server(factory: ServerFactory, tls: TlsSystemConfig) -> str:
    server: RemotingServer = await factory(
        lambda s: s.table.register_processor(RequestCode.HEART_BEAT, echo_processor()),
        tls=tls,
    )
    return f"127.0.0.1:{server.port}"


def tls_client(made: list[RemotingClient], config: TlsSystemConfig | None) -> RemotingClient:
    context = config.client_context() if config is not None else None
    client = RemotingClient(connect_timeout_s=2.0, ssl=context)
    made.append(client)
    return client


async def echo(client: RemotingClient, addr: str) -> bytes:
    request = RemotingCommand.create_request(RequestCode.HEART_BEAT, body=b"secret")
    response = await client.invoke(addr, request, 5)
    assert response.code == ResponseCode.SUCCESS
    return response.body


async def test_enforcing_serves_tls_and_refuses_plain_with_a_log_line(
    server_factory: ServerFactory,
    clients: list[RemotingClient],
    pki: Pki,
    caplog: pytest.LogCaptureFixture,
) -> None:
    addr = await start_server(
        server_factory, TlsSystemConfig().with_properties(pki.server_properties("enforcing"))
    )
    client_tls = TlsSystemConfig().with_properties(pki.client_properties())
    assert await echo(tls_client(clients, client_tls), addr) == b"secret"

    caplog.set_level(logging.WARNING, logger="orbitmq.remoting")
    with pytest.raises(RemotingConnectError) as refused:
        await echo(tls_client(clients, None), addr)
    message = str(refused.value)
    assert "\n" not in message
    assert "closed" in message and "tls.server.mode=enforcing" in message
    assert any(
        "refused a plain connection" in r.getMessage() and "enforcing" in r.getMessage()
        for r in caplog.records
    )


async def test_permissive_takes_plain_and_tls_on_one_port(
    server_factory: ServerFactory, clients: list[RemotingClient], pki: Pki
) -> None:
    addr = await start_server(
        server_factory, TlsSystemConfig().with_properties(pki.server_properties("permissive"))
    )
    client_tls = TlsSystemConfig().with_properties(pki.client_properties())
    for _ in range(2):
        assert await echo(tls_client(clients, client_tls), addr) == b"secret"
        assert await echo(tls_client(clients, None), addr) == b"secret"


async def test_a_large_body_crosses_tls_whole(
    server_factory: ServerFactory, clients: list[RemotingClient], pki: Pki
) -> None:
    addr = await start_server(
        server_factory, TlsSystemConfig().with_properties(pki.server_properties("enforcing"))
    )
    client = tls_client(clients, TlsSystemConfig().with_properties(pki.client_properties()))
    body = bytes(range(256)) * 16384  # 4 MiB: many TLS records each way
    request = RemotingCommand.create_request(RequestCode.HEART_BEAT, body=body)
    response = await client.invoke(addr, request, 10)
    assert response.body == body


@pytest.mark.parametrize("why", ["disabled mode", "no certificate"])
async def test_disabled_refuses_tls(
    server_factory: ServerFactory,
    clients: list[RemotingClient],
    pki: Pki,
    caplog: pytest.LogCaptureFixture,
    why: str,
) -> None:
    server_tls = (
        TlsSystemConfig().with_properties(pki.server_properties("disabled"))
        if why == "disabled mode"
        else TlsSystemConfig(server_mode=TlsMode.PERMISSIVE)
    )
    addr = await start_server(server_factory, server_tls)
    caplog.set_level(logging.WARNING, logger="orbitmq.remoting")
    client_tls = TlsSystemConfig().with_properties(pki.client_properties())
    with pytest.raises(RemotingError):
        await echo(tls_client(clients, client_tls), addr)
    assert any("refused a TLS connection" in r.getMessage() for r in caplog.records)
    assert await echo(tls_client(clients, None), addr) == b"secret"


@pytest.mark.parametrize("need_client_auth", ["require", "optional"])
async def test_client_auth_refuses_an_untrusted_certificate(
    server_factory: ServerFactory,
    clients: list[RemotingClient],
    pki: Pki,
    need_client_auth: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    properties = pki.server_properties("enforcing", need_client_auth)
    addr = await start_server(server_factory, TlsSystemConfig().with_properties(properties))
    trusted = TlsSystemConfig().with_properties(pki.client_properties())
    assert await echo(tls_client(clients, trusted), addr) == b"secret"

    # Refused in the handshake; under TLS 1.3 the client may learn it only as it sends.
    caplog.set_level(logging.WARNING, logger="orbitmq.remoting")
    untrusted = TlsSystemConfig().with_properties(pki.client_properties(trusted=False))
    with pytest.raises(RemotingError):
        await echo(tls_client(clients, untrusted), addr)
    assert any("TLS handshake with" in r.getMessage() for r in caplog.records)

    # No certificate at all: refused only when one is required.
    no_cert = TlsSystemConfig().with_properties(
        {**pki.client_properties(), "tls.client.certPath": "", "tls.client.keyPath": ""}
    )
    if need_client_auth == "require":
        with pytest.raises(RemotingError):
            await echo(tls_client(clients, no_cert), addr)
    else:
        assert await echo(tls_client(clients, no_cert), addr) == b"secret"


async def test_a_client_checking_the_server_refuses_an_unknown_ca(
    server_factory: ServerFactory, clients: list[RemotingClient], pki: Pki, tmp_path: Path
) -> None:
    addr = await start_server(
        server_factory, TlsSystemConfig().with_properties(pki.server_properties("enforcing"))
    )
    wrong_trust = TlsSystemConfig().with_properties(
        {**pki.client_properties(), "tls.client.trustCertPath": str(pki.untrusted_cert)}
    )
    with pytest.raises(RemotingConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await echo(tls_client(clients, wrong_trust), addr)
    # Test mode (RocketMQ's default) trusts any server.
    test_mode = wrong_trust.with_properties({"tls.test.mode.enable": "true"})
    assert await echo(tls_client(clients, test_mode), addr) == b"secret"


async def test_a_blocking_channel_over_tls(server_factory: ServerFactory, pki: Pki) -> None:
    """The blocking reader's channel (Spark executors' range reads) speaks TLS too, and an
    idle TLS channel still counts as open."""
    addr = await start_server(
        server_factory, TlsSystemConfig().with_properties(pki.server_properties("enforcing"))
    )
    context = TlsSystemConfig().with_properties(pki.client_properties()).client_context()

    def exchange() -> tuple[bytes, bool]:
        channel = BlockingChannel(addr, 2.0, context)
        try:
            channel.send(RemotingCommand.create_request(RequestCode.HEART_BEAT, body=b"x"), 2.0)
            _, body = channel.receive(2.0)
            return bytes(body), not channel.peer_closed()
        finally:
            channel.close()

    assert await asyncio.to_thread(exchange) == (b"x", True)


async def test_a_connection_that_sends_nothing_is_closed_when_idle(
    server_factory: ServerFactory, pki: Pki
) -> None:
    server: RemotingServer = await server_factory(
        tls=TlsSystemConfig().with_properties(pki.server_properties("permissive")),
        channel_max_idle_s=0.2,
    )
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        assert await asyncio.wait_for(reader.read(1), 5) == b""  # closed by the server
    finally:
        writer.close()
