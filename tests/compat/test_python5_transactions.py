"""The official RocketMQ 5 Python client's transaction Producer with a checker
(``rocketmq-python-client==5.1.2``, gRPC), unchanged, in its own virtualenv, against
``orbitmq start`` with fast checks: a committed half is delivered, a rolled-back one never,
and one left open is asked about through the client's Telemetry stream (a
RecoverOrphanedTransactionCommand its checker answers COMMIT), then delivered. Delivery is
read back over OrbitMQ's remoting protocol."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from orbitmq.common import MessageExt
from orbitmq.remoting import RemotingClient
from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import pull_queue
from tests.compat.test_python5_client import create_topic
from tests.eventually import eventually, stays

# The first run makes the client's virtualenv (a pip install) inside the first test's time.
pytestmark = pytest.mark.timeout(600)

TOPIC = "Py5TransactionTopic"
QUEUES = 2
WAIT_S = 60


@pytest.fixture(scope="module")
def broker_conf() -> str:
    # A half is checked 1 s after it is stored, every second.
    return "transactionTimeOut=1000\ntransactionCheckInterval=1000\n"


def delivered(orbitmq: OrbitMQ) -> list[MessageExt]:
    async def pull() -> list[MessageExt]:
        client = RemotingClient(connect_timeout_s=2.0)
        try:
            return [
                m
                for queue_id in range(QUEUES)
                for m in await pull_queue(client, orbitmq.broker, TOPIC, queue_id)
            ]
        finally:
            await client.close()

    return asyncio.run(pull())


def checked(lines: list[dict[str, Any]]) -> bool:
    return any(line.get("check") == "unknown" for line in lines)


def test_commit_rollback_and_check_back_of_the_python_5x_transaction_producer(
    orbitmq: OrbitMQ, python_5x: ClientRunner
) -> None:
    assert orbitmq.grpc, "orbitmq start printed no gRPC endpoint"
    create_topic(orbitmq, TOPIC, "TRANSACTION", queues=QUEUES)
    with python_5x.start("python5_transaction_producer.py", orbitmq.grpc, TOPIC) as client:
        lines = client.wait_for(checked, WAIT_S)
        bodies = eventually(
            lambda: sorted(m.body for m in delivered(orbitmq)) == [b"commit", b"unknown"],
            30,
            0.2,
            what="the committed and the checked-then-committed message delivered",
        )
        assert bodies
        # The rolled-back half never shows, however often the broker checks.
        stays(
            lambda: sorted(m.body for m in delivered(orbitmq)) == [b"commit", b"unknown"],
            2,
            0.2,
            what="nothing else delivered",
        )
    sent = {line["sent"]: line for line in lines if "sent" in line}
    assert sorted(sent) == ["commit", "rollback", "unknown"]
    assert all(line["transaction_id"] for line in sent.values())
    checks = [line for line in lines if "check" in line]
    # Only the open half is asked about, with the message the producer sent.
    assert {c["check"] for c in checks} == {"unknown"}
    assert checks[0]["message_id"] == sent["unknown"]["message_id"]
    assert (checks[0]["tag"], checks[0]["keys"]) == ("tx", ["key-unknown"])
    by_body = {m.body: m for m in delivered(orbitmq)}
    for body in (b"commit", b"unknown"):
        message = by_body[body]
        assert message.unique_key == sent[body.decode()]["message_id"]
        assert message.tags == "tx" and message.keys == [f"key-{body.decode()}"]
