"""The official C++ client 2.1.0's transactional producer (``rocketmq-python-cvs``'s bundled
library, through ``clients/cpp_transaction_producer.py``), unchanged, against ``orbitmq
start`` with fast checks: its halves are stored invisibly, its local verdicts are obeyed, it
answers the broker's checks (UNKNOWN first, COMMIT on the next), and its committed messages
reach a C++ PushConsumer; the rolled-back one never does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import read_back

# The first run makes the client's virtualenv (a pip install) inside the first test's time.
pytestmark = pytest.mark.timeout(600)

TOPIC = "CppCvsTransactionTopic"
GROUP = "cpp-tx-pg"
WAIT_S = 60


@pytest.fixture(scope="module")
def broker_conf() -> str:
    # A half is checked 1 s after it is stored, every second.
    return "transactionTimeOut=1000\ntransactionCheckInterval=1000\n"


def checked_twice(lines: list[dict[str, Any]]) -> bool:
    return any(line.get("check") == "unknown" and line["n"] >= 2 for line in lines)


def test_halves_checks_and_verdicts_of_the_cpp_transaction_producer(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner
) -> None:
    with cpp_cvs.start("cpp_transaction_producer.py", orbitmq.namesrv, TOPIC, GROUP) as client:
        lines = client.wait_for(checked_twice, WAIT_S)
        consumed = cpp_cvs.run(
            "cpp_push_consumer.py", orbitmq.namesrv, TOPIC, "cpp-tx-cg", 2, WAIT_S, "clustering", ""
        )
    sent = {line["sent"]: line for line in lines if "sent" in line}
    assert sorted(sent) == ["commit", "rollback", "unknown"]
    assert {line["status"] for line in sent.values()} == {"OK"}
    checks = [line for line in lines if "check" in line]
    # Only the UNKNOWN half is asked about: UNKNOWN answered once, COMMIT the next time.
    assert [(c["check"], c["n"], c["answer"]) for c in checks[:2]] == [
        ("unknown", 1, "UNKNOWN"),
        ("unknown", 2, "COMMIT"),
    ]
    assert {c["check"] for c in checks} == {"unknown"}
    for c in checks:
        # The check's message is the half in its real topic, with its unique id.
        assert (c["topic"], c["transaction_id"]) == (TOPIC, sent["unknown"]["msg_id"])

    assert sorted(m["body"] for m in consumed) == ["commit", "unknown"]
    assert {m["msg_id"] for m in consumed} == {sent["commit"]["msg_id"], sent["unknown"]["msg_id"]}
    stored = asyncio.run(read_back(orbitmq, TOPIC, 0)).pulled
    # Each committed once; the rolled-back half never reaches the topic.
    assert sorted(m.body for m in stored) == [b"commit", b"unknown"]
    assert all("TRAN_MSG" not in m.properties for m in stored)
