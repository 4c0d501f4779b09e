"""OrbitMQ's own clients against a broker with aclEnable=true: with credentials in their
ClientConfig a producer, a consumer and the admin client are let in as their accounts allow;
without them a send fails with RocketMQ's refusal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from orbitmq.client import (
    AdminClient,
    ClientConfig,
    LitePullConsumer,
    MQBrokerError,
    PlainAccessConfig,
    Producer,
)
from orbitmq.common import Message, MessageExt
from orbitmq.testing import InProcessCluster

pytestmark = [pytest.mark.timeout(90), pytest.mark.slow]

PLAIN_ACL_YML = """\
accounts:
  - accessKey: producer1
    secretKey: producer-secret
    defaultTopicPerm: DENY
    topicPerms: [Orders=PUB, TBW102=PUB]
    defaultGroupPerm: SUB
  - accessKey: consumer1
    secretKey: consumer-secret
    topicPerms: [Orders=SUB]
    groupPerms: [orders-cg=SUB]
  - accessKey: operator1
    secretKey: operator-secret
    admin: true
"""


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    (tmp_path / "home" / "conf").mkdir(parents=True)
    (tmp_path / "home" / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    settings = {"acl_enable": True, "rocketmq_home": str(tmp_path / "home")}
    async with InProcessCluster(tmp_path / "cluster", broker_settings=settings) as running:
        yield running


def config(
    cluster: InProcessCluster, access_key: str | None, secret_key: str | None
) -> ClientConfig:
    return ClientConfig(
        namesrv_addr=cluster.namesrv_addr, access_key=access_key, secret_key=secret_key
    )


async def test_signed_clients_produce_and_consume_and_unsigned_ones_are_refused(
    cluster: InProcessCluster,
) -> None:
    operator = config(cluster, "operator1", "operator-secret")
    async with AdminClient(client_config=operator) as admin:
        await admin.create_topic("Orders", queue_nums=2)
    producer_config = config(cluster, "producer1", "producer-secret")
    async with Producer("orders-pg", client_config=producer_config) as producer:
        for i in range(4):
            await producer.send(Message("Orders", b"order-%d" % i))
    async with Producer("orders-pg", client_config=config(cluster, None, None)) as stranger:
        with pytest.raises(MQBrokerError) as refused:
            await stranger.send(Message("Orders", b"forged"))
    assert refused.value.code == 1
    assert "No accessKey is configured" in str(refused.value)

    consumer = LitePullConsumer(
        "orders-cg", client_config=config(cluster, "consumer1", "consumer-secret")
    )
    consumer.subscribe("Orders")
    await consumer.start()
    got: list[MessageExt] = []
    try:
        async with asyncio.timeout(20):
            while len(got) < 4:
                got.extend(await consumer.poll(timeout_s=1.0))
    finally:
        await consumer.shutdown()
    assert sorted(m.body for m in got) == [b"order-%d" % i for i in range(4)]


async def test_the_admin_client_edits_every_broker_of_the_cluster(
    cluster: InProcessCluster, tmp_path: Path
) -> None:
    operator = config(cluster, "operator1", "operator-secret")
    async with AdminClient(client_config=operator) as admin:
        addrs = await admin.update_acl_config(
            PlainAccessConfig("auditor1", "auditor-secret", default_topic_perm="SUB"),
            cluster="DefaultCluster",
        )
        assert addrs == [cluster.brokers[0].address]
        (version,) = await admin.cluster_acl_config_version(cluster="DefaultCluster")
        assert '"counter":1' in version.version
    written = yaml.safe_load((tmp_path / "home" / "conf" / "plain_acl.yml").read_text())
    assert written["accounts"][-1]["accessKey"] == "auditor1"
    async with AdminClient(
        client_config=config(cluster, "producer1", "producer-secret")
    ) as not_admin:
        with pytest.raises(MQBrokerError, match="Need admin permission for request code=17"):
            await not_admin.create_topic("Sneaky", queue_nums=1)
