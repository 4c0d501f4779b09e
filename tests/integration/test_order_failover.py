"""Normal and strict order when a broker stops (R43): two brokers, an ordered send by key.

Normal order: the route drops the stopped broker's queues, so the key's hash lands on a
queue of the broker still up (the order of that key may break once, briefly). Strict order:
the name server's orderMessageEnable and the topic's ORDER_TOPIC_CONFIG fix the queue list,
so the key keeps its queue on the stopped broker and the send fails: no silent move."""

from __future__ import annotations

from pathlib import Path

import pytest

from orbitmq.client import AdminClient, MQClientError, Producer, select_by_hash
from orbitmq.common import Message
from orbitmq.testing import InProcessCluster

pytestmark = pytest.mark.timeout(60)

TOPIC = "OrderFailover"
QUEUE_NUMS = 4


async def _routed_brokers(admin: AdminClient) -> set[str]:
    return {q.broker_name for q in (await admin.topic_route(TOPIC)).queue_datas}


def _key_on(broker_name: str, producer: Producer) -> str:
    """An order key whose hash picks a queue of ``broker_name`` from the current queues."""
    queues = producer.instance.publish_info[TOPIC].message_queues
    return next(
        key
        for key in (f"order-{i}" for i in range(1000))
        if select_by_hash(queues, Message(TOPIC, b""), key).broker_name == broker_name
    )


@pytest.mark.parametrize("strict", [False, True], ids=["normal", "strict"])
async def test_an_ordered_send_after_its_broker_stops(tmp_path: Path, strict: bool) -> None:
    async with (
        InProcessCluster(
            tmp_path / "cluster", brokers=2, namesrv_settings={"order_message_enable": True}
        ) as cluster,
        AdminClient(namesrv_addr=cluster.namesrv_addr) as admin,
        Producer("OrderGroup", namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        await admin.create_topic(TOPIC, queue_nums=QUEUE_NUMS, order=strict)
        first = await producer.send(Message(TOPIC, b"warm"), selector=select_by_hash, arg="x")
        assert first.message_queue.topic == TOPIC
        info = producer.instance.publish_info[TOPIC]
        assert info.order_topic is strict
        assert len(info.message_queues) == 2 * QUEUE_NUMS
        key = _key_on("broker-b", producer)
        before = await producer.send(Message(TOPIC, b"before"), selector=select_by_hash, arg=key)
        assert before.message_queue.broker_name == "broker-b"

        await cluster.stop_broker(cluster.brokers[1])  # unregisters from the name server
        assert await _routed_brokers(admin) == {"broker-a"}
        await producer.instance.update_topic_route(TOPIC)  # as the 30 s route refresh does

        after = Message(TOPIC, b"after")
        if not strict:
            moved = await producer.send(after, selector=select_by_hash, arg=key)
            assert moved.message_queue.broker_name == "broker-a"
            assert len(producer.instance.publish_info[TOPIC].message_queues) == QUEUE_NUMS
            return
        # The queue list still holds broker-b's queues: the key keeps its queue, and fails.
        assert len(producer.instance.publish_info[TOPIC].message_queues) == 2 * QUEUE_NUMS
        with pytest.raises(MQClientError, match=r"The broker\[broker-b\] not exist: .*strict"):
            await producer.send(after, selector=select_by_hash, arg=key)
        # Keys on the broker still up are unaffected.
        other = await producer.send(
            after, selector=select_by_hash, arg=_key_on("broker-a", producer)
        )
        assert other.message_queue.broker_name == "broker-a"


async def test_brokers_take_the_order_topics_from_the_name_server(tmp_path: Path) -> None:
    # RocketMQ's registerBrokerAll hands the name server's ORDER_TOPIC_CONFIG to the
    # broker's updateOrderTopicConfig: topics listed become ordered, the others not (the
    # order flag of UPDATE_AND_CREATE_TOPIC is ignored, as by RocketMQ 4.9.8).
    async with (
        InProcessCluster(tmp_path / "cluster") as cluster,
        AdminClient(namesrv_addr=cluster.namesrv_addr) as admin,
    ):
        broker = cluster.brokers[0]
        topics = broker.topic_config_manager
        await admin.create_topic("Plain", queue_nums=2)
        await admin.create_topic("Ordered", queue_nums=2, order=True)
        await broker.registration_service.register_now()
        assert not topics.is_order_topic("Plain")
        assert topics.is_order_topic("Ordered")

        await admin.api.delete_kv_config(cluster.namesrv_addr, "ORDER_TOPIC_CONFIG", "Ordered", 3)
        await admin.api.put_kv_config(
            cluster.namesrv_addr, "ORDER_TOPIC_CONFIG", "Plain", "broker-a:2", 3
        )
        await broker.registration_service.register_now()
        assert topics.is_order_topic("Plain")
        assert not topics.is_order_topic("Ordered")
