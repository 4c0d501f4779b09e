"""The official C++ client 2.1.0 (``rocketmq-python-cvs``) with session credentials against
``orbitmq start`` with aclEnable=true: its signed sends are let in as its account allows, and
refused (nothing stored) without credentials or for a topic its account may not write."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from orbitmq.client import ClientConfig, QueueReader
from orbitmq.remoting import run
from tests.compat.conftest import ClientRunner, OrbitMQ

pytestmark = pytest.mark.timeout(600)

PLAIN_ACL_YML = """\
accounts:
  - accessKey: cppClient1
    secretKey: cpp-secret-1
    defaultTopicPerm: DENY
    topicPerms: [CppAclTopic=PUB|SUB, TBW102=PUB, CppAclLocked=DENY]
    defaultGroupPerm: SUB
"""


@pytest.fixture(scope="module")
def broker_conf(tmp_path_factory: pytest.TempPathFactory) -> str:
    home = tmp_path_factory.mktemp("rocketmq-home")
    (home / "conf").mkdir()
    (home / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    return f"aclEnable=true\nrocketmqHome={home}\n"


@pytest.fixture
def signed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("COMPAT_ACCESS_KEY", "cppClient1")
    monkeypatch.setenv("COMPAT_SECRET_KEY", "cpp-secret-1")
    yield


@pytest.fixture
def sent_signed(orbitmq: OrbitMQ, cpp_cvs: ClientRunner, signed: None) -> list[dict[str, object]]:
    """Five signed sends to CppAclTopic (the first creates it from TBW102)."""
    return cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, "CppAclTopic", "cpp-acl-pg", 5)


def stored(orbitmq: OrbitMQ, topic: str) -> int:
    """Messages in the topic's queues, read back with OrbitMQ's own signed client."""
    config = ClientConfig(
        namesrv_addr=orbitmq.namesrv, access_key="cppClient1", secret_key="cpp-secret-1"
    )

    async def count() -> int:
        async with QueueReader(client_config=config) as reader:
            offsets = await reader.queue_offsets(topic)
            return sum(high - low for low, high in offsets.values())

    return run(count())


def test_signed_sends_are_stored_and_unsigned_ones_refused(
    orbitmq: OrbitMQ, cpp_cvs: ClientRunner, sent_signed: list[dict[str, object]]
) -> None:
    assert [r["status"] for r in sent_signed] == ["OK"] * 5
    assert stored(orbitmq, "CppAclTopic") == 5
    with pytest.MonkeyPatch.context() as env:
        env.delenv("COMPAT_ACCESS_KEY", raising=False)
        with pytest.raises(AssertionError, match="No acl config for"):
            # Without credentials the C++ client still sends an empty AccessKey.
            cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, "CppAclTopic", "cpp-acl-pg", 1)
    assert stored(orbitmq, "CppAclTopic") == 5


@pytest.mark.usefixtures("signed")
def test_a_denied_topic_is_refused(orbitmq: OrbitMQ, cpp_cvs: ClientRunner) -> None:
    with pytest.raises(AssertionError, match="No default permission for topic:CppAclLocked"):
        cpp_cvs.run("cpp_producer.py", orbitmq.namesrv, "CppAclLocked", "cpp-acl-pg", 1)
