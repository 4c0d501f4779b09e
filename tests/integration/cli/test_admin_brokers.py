"""``orbitmq admin``'s broker and name server commands (brokerStatus, getBrokerConfig,
updateBrokerConfig, statsAll, brokerConsumeStats, cleanExpiredCQ, queryCq, getNamesrvConfig,
updateNamesrvConfig, wipeWritePerm, addWritePerm, updateKvConfig, deleteKvConfig) against
two running brokers, read back from ``--json`` and from the servers themselves."""

from __future__ import annotations

from orbitmq.client import AdminClient
from orbitmq.testing import ThreadedCluster
from tests.integration.cli.conftest import Orbitmq, running_consumer

CLUSTER = "DefaultCluster"


def addrs(cluster: ThreadedCluster) -> list[str]:
    return [b.address for b in cluster.cluster.brokers]


def sample_stats(cluster: ThreadedCluster) -> None:
    """Take the brokers' 10-second stats sample now (statsAll reads the samples)."""

    async def sample() -> None:
        for broker in cluster.cluster.brokers:
            broker.broker_stats_manager.sampling_in_seconds()

    cluster.call(sample())


def test_broker_status_and_config_of_one_broker_or_a_cluster(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    a, b = addrs(cluster)
    status = orbitmq.json("admin", "brokerStatus", "-b", a)
    assert list(status) == [a]
    assert status[a]["brokerVersionDesc"] == "V4_9_8"
    assert "msgPutTotalTodayNow" in status[a] and "commitLogMaxOffset" in status[a]
    assert sorted(orbitmq.json("admin", "brokerStatus", "-c", CLUSTER)) == sorted([a, b])

    configs = orbitmq.json("admin", "getBrokerConfig", "-c", CLUSTER)
    assert {addr: c["brokerName"] for addr, c in configs.items()} == {
        a: "broker-a",
        b: "broker-b",
    }
    table = orbitmq.run("admin", "getBrokerConfig", "-b", a)
    assert table.exit_code == 0
    assert a in table.stdout and "brokerClusterName" in table.stdout


def test_update_broker_config_changes_the_running_broker(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    a, _ = addrs(cluster)
    rows = orbitmq.json("admin", "updateBrokerConfig", "-b", a, "-k", "fileReservedTime",
                        "-v", "48")  # fmt: skip
    assert [(r["brokerAddr"], r["key"], r["value"]) for r in rows] == [
        (a, "fileReservedTime", "48")
    ]
    assert orbitmq.json("admin", "getBrokerConfig", "-b", a)[a]["fileReservedTime"] == "48"
    assert cluster.cluster.brokers[0].message_store.config.file_reserved_time == 48

    rows = orbitmq.json("admin", "updateBrokerConfig", "-c", CLUSTER, "-k", "fileReservedTime",
                        "-v", "72")  # fmt: skip
    assert len(rows) == 2
    configs = orbitmq.json("admin", "getBrokerConfig", "-c", CLUSTER)
    assert {c["fileReservedTime"] for c in configs.values()} == {"72"}


def test_broker_command_errors_are_one_line(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    a, _ = addrs(cluster)
    refused = orbitmq.error("admin", "updateBrokerConfig", "-b", a, "-k", "brokerConfigPath",
                            "-v", "/tmp/x")  # fmt: skip
    assert "black list" in refused
    assert orbitmq.error("admin", "brokerStatus").endswith(
        "brokerStatus: give one of -b/--brokerAddr and -c/--clusterName"
    )
    assert "cluster 'Nope' is not known" in orbitmq.error("admin", "getBrokerConfig", "-c", "Nope")
    assert "127.0.0.1:1" in orbitmq.error("admin", "brokerStatus", "-b", "127.0.0.1:1")


def test_stats_all_shows_traffic_in_and_out_per_group(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    topic, idle = "StatsTopic", "StatsIdle"
    for name in (topic, idle):
        orbitmq.json("admin", "updateTopic", "-c", CLUSTER, "-t", name, "-w", "1", "-r", "1")
    orbitmq.json_lines("send", "-t", topic, stdin="a\nb\nc\n")
    with running_consumer(cluster, "stats-cg", topic, count=3):
        orbitmq.json_lines("send", "-t", topic, "d")  # sent after the group's last commit
        sample_stats(cluster)
        [row] = orbitmq.json("admin", "statsAll", "-t", topic)

    assert row["topic"] == topic and row["consumerGroup"] == "stats-cg"
    assert row["inMsg24Hour"] == 4 and row["outMsg24Hour"] >= 3
    assert row["accumulation"] <= 1
    assert row["inTps"] > 0 and row["outTps"] > 0
    [no_consumer] = orbitmq.json("admin", "statsAll", "-t", idle)
    assert no_consumer == {"topic": idle, "consumerGroup": None, "accumulation": 0,
                           "inTps": 0.0, "outTps": None, "inMsg24Hour": 0,
                           "outMsg24Hour": None}  # fmt: skip
    active = [r["topic"] for r in orbitmq.json("admin", "statsAll", "-a")]
    assert topic in active and idle not in active
    table = orbitmq.run("admin", "statsAll", "-t", idle)
    assert "#Accumulation" in table.stdout and "NO_CONSUMER" in table.stdout
    assert "'Nope' is not known" in orbitmq.error("admin", "statsAll", "-t", "Nope")


def test_broker_consume_stats_prints_each_groups_diff_and_the_total(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    topic, group = "LagStats", "lag-stats-cg"
    a, _ = addrs(cluster)
    orbitmq.json("admin", "updateTopic", "-b", a, "-t", topic, "-w", "2", "-r", "2")
    orbitmq.json_lines("send", "-t", topic, stdin="1\n2\n3\n4\n5\n6\n")
    with running_consumer(cluster, group, topic, count=6):
        pass
    orbitmq.json_lines("send", "-t", topic, stdin="7\n8\n9\n")

    stats = orbitmq.json("admin", "brokerConsumeStats", "-b", a)
    mine = [q for q in stats["queues"] if (q["group"], q["topic"]) == (group, topic)]
    assert sorted(q["queueId"] for q in mine) == [0, 1]
    assert sum(q["diff"] for q in mine) == 3
    assert stats["diffTotal"] >= 3
    assert stats["diffTotal"] == sum(q["diff"] for q in stats["queues"])
    lagging = orbitmq.json("admin", "brokerConsumeStats", "-b", a, "-l", "2", "-t", "5000")
    assert all(q["diff"] >= 2 for q in lagging["queues"])
    assert lagging["diffTotal"] == stats["diffTotal"]
    table = orbitmq.run("admin", "brokerConsumeStats", "-b", a)
    assert f"Diff Total: {stats['diffTotal']}" in table.stdout


def test_clean_expired_cq_and_query_cq(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    a, b = addrs(cluster)
    topic = "CqTopic"
    orbitmq.json("admin", "updateTopic", "-b", a, "-t", topic, "-w", "1", "-r", "1")
    sent = orbitmq.json_lines("send", "-t", topic, stdin="x\ny\nz\n")

    cleaned = orbitmq.json("admin", "cleanExpiredCQ", "-c", CLUSTER)
    assert sorted(r["brokerAddr"] for r in cleaned) == sorted([a, b])
    assert all(r["cleaned"] for r in cleaned)
    assert [r["brokerAddr"] for r in orbitmq.json("admin", "cleanExpiredCQ", "-b", a)] == [a]

    cq = orbitmq.json("admin", "queryCq", "-t", topic, "-q", "0", "-i", "1", "-c", "5")
    assert cq["brokerAddr"] == a
    assert (cq["minQueueIndex"], cq["maxQueueIndex"]) == (0, 3)
    assert [u["idx"] for u in cq["queueData"]] == [1, 2]
    assert all(u["physicSize"] > 0 for u in cq["queueData"])
    assert len(sent) == 3
    table = orbitmq.run("admin", "queryCq", "-t", topic, "-q", "0", "-i", "0", "-b", a)
    assert "physicOffset" in table.stdout and "max: 3, min: 0" in table.stdout


def test_name_server_config_kv_and_write_perm(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    namesrv = cluster.namesrv_addr
    config = orbitmq.json("admin", "getNamesrvConfig")
    assert list(config) == [namesrv] and "kvConfigPath" in config[namesrv]
    updated = orbitmq.json("admin", "updateNamesrvConfig", "-k", "productEnvName", "-v", "qa")
    assert updated == [{"namesrvAddr": namesrv, "key": "productEnvName", "value": "qa"}]
    assert cluster.cluster.namesrv.config.product_env_name == "qa"
    assert "black list" in orbitmq.error("admin", "updateNamesrvConfig", "-k", "kvConfigPath",
                                         "-v", "/tmp/kv.json")  # fmt: skip

    orbitmq.json("admin", "updateKvConfig", "-s", "cli_ns", "-k", "k1", "-v", "v1")
    assert kv(cluster, "cli_ns", "k1") == "v1"
    assert orbitmq.json("admin", "deleteKvConfig", "-s", "cli_ns", "-k", "k1")["deleted"]
    assert kv(cluster, "cli_ns", "k1") is None

    wiped = orbitmq.json("admin", "wipeWritePerm", "-b", "broker-b")
    topics = len(cluster.cluster.brokers[1].topic_config_manager.topic_names())
    assert wiped == [{"namesrvAddr": namesrv, "brokerName": "broker-b", "topicsChanged": topics}]
    added = orbitmq.json("admin", "addWritePerm", "-b", "broker-b")
    assert added[0]["topicsChanged"] == topics


def kv(cluster: ThreadedCluster, namespace: str, key: str) -> str | None:
    async def get() -> str | None:
        async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
            return await admin.get_kv_config(namespace, key)

    return cluster.call(get())
