"""``ThreadedCluster(slaves=1)``: users' blocking tests get a slave per broker group, registered
under brokerId 1 beside its master."""

from __future__ import annotations

from pathlib import Path

from orbitmq import LitePullConsumerConfig, Message
from orbitmq.broker import BrokerController
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.sync import AdminClient, LitePullConsumer, Producer
from orbitmq.testing import ThreadedCluster
from tests.eventually import eventually


def test_a_threaded_cluster_starts_a_slave_per_broker_group(tmp_path: Path) -> None:
    with ThreadedCluster(tmp_path, brokers=2, slaves=1) as cluster:
        brokers = cluster.cluster.brokers
        ids = sorted((b.broker_config.broker_name, b.broker_config.broker_id) for b in brokers)
        assert ids == [("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1)]
        info = cluster.cluster.namesrv.route_info_manager.get_all_cluster_info()
        addrs = {name: data.broker_addrs for name, data in info.broker_addr_table.items()}
        for name in ("broker-a", "broker-b"):
            (slave,) = cluster.cluster.slaves_of(name)
            assert addrs[name][1] == slave.address
            assert slave.master_address.master_addr == addrs[name][0]
    assert (tmp_path / "broker-b-s1").is_dir()


def test_messages_pulled_tells_a_blocking_test_that_the_slave_served(tmp_path: Path) -> None:
    """Master stopped: a blocking consumer reads from the slave, and the cluster says so."""
    topic, group = "ThreadedFailover", "ThreadedFailoverGroup"
    with ThreadedCluster(tmp_path, slaves=1) as cluster:
        with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            admin.create_topic(topic, queue_nums=1)
        with Producer("ThreadedFailoverProducer", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(3):
                producer.send(Message(topic, f"m{i}".encode()))
        (master,) = [b for b in cluster.cluster.brokers if b.broker_config.broker_id == 0]
        (slave,) = cluster.cluster.slaves_of("broker-a")
        eventually(
            lambda: slave.message_store.get_max_offset_in_queue(topic, 0) == 3,
            what="the slave holds the 3 messages",
        )
        sync = slave.slave_synchronize
        assert sync is not None
        assert cluster.call(sync.sync_all())  # the topic's config, as every 10 s
        cluster.call(cluster.cluster.stop_broker(master))

        consumer = LitePullConsumer(
            group,
            namesrv_addr=cluster.namesrv_addr,
            config=LitePullConsumerConfig(
                consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
            ),
        )
        consumer.subscribe(topic)
        bodies: list[bytes] = []

        def polled_all() -> bool:
            bodies.extend(m.body for m in consumer.poll(0.2))
            return len(bodies) >= 3

        with consumer:
            eventually(polled_all, what="3 messages polled")
        assert sorted(bodies) == [b"m0", b"m1", b"m2"]
        assert cluster.messages_pulled(group, topic) == {("broker-a", 1): 3}
        assert cluster.messages_pulled("OtherGroup", topic) == {}
        # The blocking admin client asks the brokers themselves (sampled every 10 s).
        cluster.call(_sample_now(slave))
        with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            served = admin.group_get_nums(group, topic)
        assert {key: data.stats_minute.sum for key, data in served.items()} == {("broker-a", 1): 3}


async def _sample_now(broker: BrokerController) -> None:
    """Take the 10-second stats sample now, on the broker's loop (its only thread)."""
    broker.broker_stats_manager.sampling_in_seconds()
