"""``orbitmq admin``'s subscription group and connection commands (updateSubGroup,
deleteSubGroup, consumerConnection, consumerStatus, producerConnection) and the "consumed
by" rows of queryMsgById / queryMsgByUniqueKey / queryMsgByOffset, against two running
brokers with real clients online."""

from __future__ import annotations

from orbitmq.client import Producer
from orbitmq.common import Message
from orbitmq.common.topic import retry_topic
from orbitmq.testing import ThreadedCluster
from tests.integration.cli.conftest import Orbitmq, running_consumer

CLUSTER = "DefaultCluster"


def test_update_and_delete_a_subscription_group(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    brokers = cluster.cluster.brokers
    rows = orbitmq.json("admin", "updateSubGroup", "-c", CLUSTER, "-g", "sub-cg", "-q", "3",
                        "-r", "5", "-d", "true", "-s", "false")  # fmt: skip
    assert sorted(r["brokerAddr"] for r in rows) == sorted(b.address for b in brokers)
    assert rows[0]["retryQueueNums"] == 3 and rows[0]["consumeBroadcastEnable"] is True
    for broker in brokers:
        config = broker.subscription_group_manager.get("sub-cg")
        assert config is not None
        assert (config.retry_queue_nums, config.retry_max_times) == (3, 5)
        assert (config.consume_broadcast_enable, config.consume_enable) == (True, False)
        assert config.consume_from_min_enable is False  # mqadmin's default

    orbitmq.json("admin", "updateSubGroup", "-b", brokers[0].address, "-g", "only-a-cg")
    assert brokers[0].subscription_group_manager.get("only-a-cg") is not None
    assert brokers[1].subscription_group_manager.get("only-a-cg") is None

    orbitmq.json("admin", "updateTopic", "-c", CLUSTER, "-t", retry_topic("sub-cg"), "-w", "1")
    deleted = orbitmq.json("admin", "deleteSubGroup", "-c", CLUSTER, "-g", "sub-cg", "-r", "true")
    assert len(deleted) == 2 and all(r["deleted"] for r in deleted)
    assert all(b.subscription_group_manager.get("sub-cg") is None for b in brokers)
    assert "No route info" in orbitmq.error("admin", "topicRoute", "-t", retry_topic("sub-cg"))
    orbitmq.json("admin", "deleteSubGroup", "-b", brokers[0].address, "-g", "only-a-cg")
    assert brokers[0].subscription_group_manager.get("only-a-cg") is None

    assert orbitmq.error("admin", "updateSubGroup", "-g", "x").endswith(
        "updateSubGroup: give one of -b/--brokerAddr and -c/--clusterName"
    )


def test_consumer_connection_and_status_of_an_online_group(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    topic, group = "ConnTopic", "conn-cg"
    orbitmq.json("admin", "updateTopic", "-c", CLUSTER, "-t", topic, "-w", "2", "-r", "2")
    orbitmq.json_lines("send", "-t", topic, stdin="a\nb\n")
    with running_consumer(cluster, group, topic, count=2) as consumer:
        client_id = consumer.instance.client_id
        connection = orbitmq.json("admin", "consumerConnection", "-g", group)
        through_a = orbitmq.json("admin", "consumerConnection", "-g", group,
                                 "-b", cluster.cluster.brokers[0].address)  # fmt: skip
        summary = orbitmq.json("admin", "consumerStatus", "-g", group)
        full = orbitmq.json("admin", "consumerStatus", "-g", group, "-i", client_id, "-s")
        table = orbitmq.run("admin", "consumerConnection", "-g", group)

    [client] = connection["connections"]
    assert client["clientId"] == client_id and client["language"] == "PYTHON"
    assert client["version"] == 409
    assert {s["topic"] for s in connection["subscriptions"]} == {topic, retry_topic(group)}
    assert connection["consumeType"] == "CONSUME_PASSIVELY"
    assert connection["messageModel"] == "CLUSTERING"
    assert [c["clientId"] for c in through_a["connections"]] == [client_id]
    assert "Below is subscription:" in table.stdout and "CONSUME_PASSIVELY" in table.stdout

    [info] = summary["clients"]
    assert summary["sameSubscription"] is True
    assert info["clientId"] == client_id
    assert full["properties"]["consumerGroup"] == group
    held = [q for q in full["queues"] if q["topic"] == topic]
    assert sorted((q["brokerName"], q["queueId"]) for q in held) == [
        ("broker-a", 0), ("broker-a", 1), ("broker-b", 0), ("broker-b", 1),
    ]  # fmt: skip
    assert sum(q["commitOffset"] for q in held) == 2
    assert set(full["status"]) == {topic, retry_topic(group)}
    assert full["jstack"]

    assert "is not online" in orbitmq.error("admin", "consumerConnection", "-g", group)
    assert "ever started" in orbitmq.error("admin", "consumerStatus", "-g", "nobody-cg")


def test_producer_connection(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    topic = "ProducerConnTopic"
    orbitmq.json("admin", "updateTopic", "-c", CLUSTER, "-t", topic, "-w", "1", "-r", "1")
    producer = Producer("conn-pg", namesrv_addr=cluster.namesrv_addr)
    cluster.call(producer.start())
    try:
        cluster.call(producer.send(Message(topic, b"p")))
        cluster.call(producer.instance.send_heartbeat_to_all_brokers())
        rows = orbitmq.json("admin", "producerConnection", "-g", "conn-pg", "-t", topic)
    finally:
        cluster.call(producer.shutdown())
    assert [r["clientId"] for r in rows] == [producer.instance.client_id]
    assert rows[0]["language"] == "PYTHON"
    assert "is not online" in orbitmq.error("admin", "producerConnection", "-g", "conn-pg",
                                            "-t", topic)  # fmt: skip


def test_query_msg_shows_which_groups_consumed_it(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    topic = "TrackTopic"
    orbitmq.json("admin", "updateTopic", "-b", cluster.cluster.brokers[0].address, "-t", topic,
                 "-w", "1", "-r", "1")  # fmt: skip
    [sent] = orbitmq.json_lines("send", "-t", topic, "tracked")
    # A group that read it once and went away: offsets committed, no client online.
    orbitmq.json_lines("consume", "-t", topic, "-g", "gone-cg", "--from", "first", "--count", "1")
    with running_consumer(cluster, "live-cg", topic, count=1):
        by_id = orbitmq.json("admin", "queryMsgById", "-i", sent["offsetMsgId"])
        by_key = orbitmq.json("admin", "queryMsgByUniqueKey", "-i", sent["msgId"], "-t", topic)
        by_offset = orbitmq.json("admin", "queryMsgByOffset", "-t", topic, "-b", "broker-a",
                                 "-i", "0", "-o", "0")  # fmt: skip
        table = orbitmq.run("admin", "queryMsgById", "-i", sent["offsetMsgId"])

    for found in (by_id, by_key, by_offset):
        assert found["body"] == "tracked"
        tracks = {t["consumerGroup"]: t["trackType"] for t in found["consumedBy"]}
        assert tracks == {"live-cg": "CONSUMED", "gone-cg": "NOT_ONLINE"}
    assert "consumed by" in table.stdout and "NOT_ONLINE" in table.stdout

    orbitmq.json("admin", "updateTopic", "-c", CLUSTER, "-t", "Untracked", "-w", "1", "-r", "1")
    [alone] = orbitmq.json_lines("send", "-t", "Untracked", "nobody")
    assert orbitmq.json("admin", "queryMsgById", "-i", alone["offsetMsgId"])["consumedBy"] == []
    assert "WARN: No Consumer" in orbitmq.run("admin", "queryMsgById",
                                              "-i", alone["offsetMsgId"]).stdout  # fmt: skip


def test_update_sub_group_makes_a_fifo_group(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    rows = orbitmq.json("admin", "updateSubGroup", "-c", CLUSTER, "-g", "fifo-cg", "-o", "true")
    assert {row["consumeMessageOrderly"] for row in rows} == {True}
    for broker in cluster.cluster.brokers:
        config = broker.subscription_group_manager.get("fifo-cg")
        assert config is not None and config.consume_message_orderly
