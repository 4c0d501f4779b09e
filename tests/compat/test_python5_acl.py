"""The official RocketMQ 5 Python client (``rocketmq-python-client==5.1.2``, gRPC) with ACL
credentials, unchanged, against ``orbitmq start`` with aclEnable=true and a plain_acl.yml:
an account with PUB on the topic sends (and the messages are stored), an account without it
is refused FORBIDDEN, a wrong secret key gets nothing through; the refused sends store
nothing. (tests/integration/grpc/test_grpc_acl.py checks each refusal's code and message.)"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from orbitmq.client import AdminClient, ClientConfig
from orbitmq.common import MessageExt, decode_messages
from orbitmq.protocol import ResponseCode, acl_signer
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.component.broker.conftest import pull_request

# The first run makes the client's virtualenv (a pip install) inside the first test's time.
pytestmark = pytest.mark.timeout(600)

TOPIC = "Py5AclTopic"
PLAIN_ACL_YML = """\
accounts:
  - accessKey: py5Producer
    secretKey: py5-producer-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [Py5AclTopic=PUB]
  - accessKey: py5Reader
    secretKey: py5-reader-secret
    defaultTopicPerm: DENY
    topicPerms: [Py5AclTopic=SUB]
  - accessKey: py5Admin
    secretKey: py5-admin-secret
    admin: true
"""


@pytest.fixture(scope="module")
def broker_conf(tmp_path_factory: pytest.TempPathFactory) -> str:
    home = tmp_path_factory.mktemp("acl-home")
    (home / "conf").mkdir()
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    return f"aclEnable=true\nrocketmqHome={home}\n"


def stored(orbitmq: OrbitMQ) -> list[MessageExt]:
    """Every message of the topic, pulled over remoting with the admin account's signature
    (the broker checks remoting requests too)."""

    async def pull() -> list[MessageExt]:
        client = RemotingClient(connect_timeout_s=2.0)
        messages: list[MessageExt] = []
        try:
            for queue_id in range(2):
                queue: list[MessageExt] = []
                while True:
                    request = pull_request(TOPIC, queue_id, len(queue))
                    acl_signer.sign_request(request, "py5Admin", "py5-admin-secret")
                    response = await client.invoke(orbitmq.broker, request, 5.0)
                    if response.code != ResponseCode.SUCCESS:
                        break
                    queue.extend(decode_messages(response.body))
                messages.extend(queue)
        finally:
            await client.close()
        return messages

    return asyncio.run(pull())


def create_topic(orbitmq: OrbitMQ) -> None:
    async def create() -> None:
        config = ClientConfig(
            namesrv_addr=orbitmq.namesrv, access_key="py5Admin", secret_key="py5-admin-secret"
        )
        async with AdminClient(client_config=config) as admin:
            await admin.create_topic(TOPIC, queue_nums=2)

    asyncio.run(create())


def sends(lines: list[dict[str, Any]]) -> tuple[list[int], list[str]]:
    return (
        [line["sent"] for line in lines if "sent" in line],
        [line["error"] for line in lines if "failed" in line],
    )


def test_credentials_let_in_and_refuse_the_python_5x_producer(
    orbitmq: OrbitMQ, python_5x: ClientRunner, tmp_path: Path
) -> None:
    assert orbitmq.grpc, "orbitmq start printed no gRPC endpoint"
    create_topic(orbitmq)
    run = python_5x.run
    allowed = run(
        "python5_acl_producer.py", orbitmq.grpc, TOPIC, 3, "py5Producer", "py5-producer-secret"
    )
    assert sends(allowed) == ([0, 1, 2], [])
    forbidden = run(
        "python5_acl_producer.py", orbitmq.grpc, TOPIC, 2, "py5Reader", "py5-reader-secret"
    )
    sent, errors = sends(forbidden)
    assert sent == [] and len(errors) == 2
    assert all("40300" in e or "FORBIDDEN" in e for e in errors), errors
    # A wrong secret: every call is UNAUTHORIZED, from the first route query on; this client
    # reports that as a route it cannot fetch, and sends nothing.
    forged = run("python5_acl_producer.py", orbitmq.grpc, TOPIC, 1, "py5Producer", "guessed")
    sent, errors = sends(forged)
    startup = [line["startup_failed"] for line in forged if "startup_failed" in line]
    assert sent == [] and (errors or startup)
    assert all("40100" in e or "route" in e for e in errors + startup), errors + startup
    assert sorted(m.body for m in stored(orbitmq)) == [b"body-0", b"body-1", b"body-2"]
