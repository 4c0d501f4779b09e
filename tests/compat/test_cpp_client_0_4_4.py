"""The older C++ client 1.x (``rocketmq==0.4.4``, which sends with SEND_MESSAGE, code 10),
unchanged, against ``orbitmq start``: send_sync, the messages read back through OrbitMQ's own
protocol, a clustering PushConsumer; and both ways across clients: what 0.4.4 sent consumed by
the 2.1.0 client (``rocketmq-python-cvs``), what 2.1.0 sent consumed by 0.4.4."""

from __future__ import annotations

from typing import Any

import pytest

from tests.compat.conftest import ClientRunner, OrbitMQ
from tests.compat.read_back import check_read_back, expected_all, received

COUNT = 10

# The first run makes the clients' virtualenvs (pip installs) inside the first test's time.
pytestmark = pytest.mark.timeout(600)

TOPIC = "Cpp044Topic"
#: Sent by the 2.1.0 client for the 0.4.4 consumer.
CVS_TOPIC = "CppCvsTo044Topic"


@pytest.fixture(scope="module")
def sent(orbitmq: OrbitMQ, cpp_044: ClientRunner) -> list[dict[str, Any]]:
    """The 0.4.4 producer's SendResults, one per message, in sending order."""
    return cpp_044.run("cpp_producer.py", orbitmq.namesrv, TOPIC, "cpp044-pg", COUNT)


def test_send_sync_is_acknowledged(sent: list[dict[str, Any]]) -> None:
    assert [r["status"] for r in sent] == ["OK"] * COUNT  # SendStatus.OK is SEND_OK
    assert len({r["msg_id"] for r in sent}) == COUNT
    assert all(r["offset"] >= 0 for r in sent)


def test_sent_messages_read_back_through_orbitmq(
    orbitmq: OrbitMQ, sent: list[dict[str, Any]]
) -> None:
    check_read_back(orbitmq, TOPIC, COUNT, sent)


def consumed(runner: ClientRunner, orbitmq: OrbitMQ, topic: str, group: str) -> Any:
    # The consumer ends itself with os._exit once it has COUNT distinct messages (or exits 3
    # after 30 s): PushConsumer.shutdown() segfaults inside the client library.
    return runner.run("cpp_push_consumer.py", orbitmq.namesrv, topic, group, COUNT, 30)


def assert_received(lines: list[dict[str, Any]], topic: str, sent: list[dict[str, Any]]) -> None:
    assert sorted(received(r) for r in lines) == expected_all(COUNT)
    assert {r["msg_id"] for r in lines} == {r["msg_id"] for r in sent}
    assert all(r["topic"] == topic and r["reconsume_times"] == 0 for r in lines)


def test_push_consumer_clustering_receives_every_message(
    orbitmq: OrbitMQ, cpp_044: ClientRunner, sent: list[dict[str, Any]]
) -> None:
    assert_received(consumed(cpp_044, orbitmq, TOPIC, "cpp044-cg"), TOPIC, sent)


def test_sent_by_0_4_4_consumed_by_2_1_0(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner, sent: list[dict[str, Any]]
) -> None:
    assert_received(consumed(cpp_cvs, orbitmq, TOPIC, "cpp044-to-cvs-cg"), TOPIC, sent)


def test_sent_by_2_1_0_consumed_by_0_4_4(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner, cpp_044: ClientRunner
) -> None:
    cvs_sent = cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, CVS_TOPIC, "cvs-to-044-pg", COUNT)
    assert [r["status"] for r in cvs_sent] == ["OK"] * COUNT

    lines = consumed(cpp_044, orbitmq, CVS_TOPIC, "cvs-to-044-cg")

    assert_received(lines, CVS_TOPIC, cvs_sent)
    check_read_back(orbitmq, CVS_TOPIC, COUNT, cvs_sent)
