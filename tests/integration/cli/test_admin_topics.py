"""``orbitmq admin``'s topic and cluster commands against two running brokers."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from orbitmq.cli.admin import SECTIONS
from orbitmq.cli.main import cli
from orbitmq.testing import ThreadedCluster
from tests.integration.cli.conftest import Orbitmq
from tests.support import run_orbitmq


def test_help_lists_every_command_under_its_section() -> None:
    result = CliRunner().invoke(cli, ["admin", "--help"])
    assert result.exit_code == 0
    text = result.stdout
    titles = ["Topic:", "Consumer group:", "Message:", "Broker:", "Cluster:", "Name server:",
              "Dead letters:", "ACL:"]  # fmt: skip
    positions = [text.index(t) for t in titles]
    assert positions == sorted(positions)
    for name in ("updateTopic", "topicStatus", "consumerProgress", "queryMsgByOffset",
                 "clusterRT", "sendMsgStatus", "dlq", "queryMsgTraceById", "statsAll",
                 "updateSubGroup", "getNamesrvConfig", "deleteKvConfig",
                 "getColdDataFlowCtrInfo"):  # fmt: skip
        assert f"  {name} " in text
    assert sum(len(s.commands) for s in SECTIONS) == 48


def test_a_topic_from_creation_to_deletion(orbitmq: Orbitmq) -> None:
    created = orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", "Life",
                           "-r", "2", "-w", "4")  # fmt: skip
    assert sorted(row["brokerName"] for row in created) == ["broker-a", "broker-b"]
    assert "Life" in [row["topic"] for row in orbitmq.json("admin", "topicList")]
    route = orbitmq.json("admin", "topicRoute", "-t", "Life")
    queues = {
        (q["brokerName"], q["readQueueNums"], q["writeQueueNums"], q["perm"])
        for q in route["queueDatas"]
    }
    assert queues == {("broker-a", 2, 4, 6), ("broker-b", 2, 4, 6)}
    status = orbitmq.json("admin", "topicStatus", "-t", "Life")
    assert {(s["brokerName"], s["maxOffset"]) for s in status} == {("broker-a", 0), ("broker-b", 0)}
    assert orbitmq.json("admin", "topicClusterList", "-t", "Life") == [
        {"clusterName": "DefaultCluster"}
    ]
    listed = orbitmq.run("admin", "topicRoute", "-t", "Life", "-l")
    assert listed.exit_code == 0
    assert "broker-b" in listed.stdout and "clusterName" in listed.stdout

    assert orbitmq.json("admin", "deleteTopic", "-t", "Life")["deleted"] is True
    assert orbitmq.error("admin", "topicRoute", "-t", "Life").endswith(
        "No route info of this topic: Life"
    )


def test_update_topic_on_one_broker_address(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    broker_b = cluster.cluster.brokers[1]
    addr = broker_b.address
    created = orbitmq.json("admin", "updateTopic", "-b", addr, "-t", "OnlyB", "-w", "3", "-r", "3",
                           "-o", "false")  # fmt: skip
    assert [(r["brokerName"], r["brokerAddr"]) for r in created] == [("broker-b", addr)]
    route = orbitmq.json("admin", "topicRoute", "-t", "OnlyB")
    assert [q["brokerName"] for q in route["queueDatas"]] == ["broker-b"]


def test_update_topic_wants_exactly_one_of_broker_and_cluster(orbitmq: Orbitmq) -> None:
    line = orbitmq.error("admin", "updateTopic", "-t", "T")
    assert "-b/--brokerAddr" in line and "-c/--clusterName" in line
    assert "not the address of a master" in orbitmq.error(
        "admin", "updateTopic", "-t", "T", "-b", "127.0.0.1:1"
    )


def test_allocate_mq_shares_the_queues_averagely(orbitmq: Orbitmq) -> None:
    orbitmq.json(
        "admin", "updateTopic", "-c", "DefaultCluster", "-t", "Shared", "-w", "2", "-r", "2"
    )
    shares = orbitmq.json("admin", "allocateMQ", "-t", "Shared", "-i", "c1,c2,c3")
    assert shares == {
        "c1": ["broker-a:0", "broker-a:1"],
        "c2": ["broker-b:0"],
        "c3": ["broker-b:1"],
    }


def test_cluster_list_shows_each_broker(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    rows = orbitmq.json("admin", "clusterList")
    assert rows == [
        {"clusterName": "DefaultCluster", "brokerName": b.broker_config.broker_name,
         "brokerId": 0, "brokerAddr": b.address}
        for b in cluster.cluster.brokers
    ]  # fmt: skip


def test_cluster_rt_and_send_msg_status_time_sends_to_each_broker(orbitmq: Orbitmq) -> None:
    rows = orbitmq.json("admin", "clusterRT", "-a", "5", "-s", "64")
    assert [(r["brokerName"], r["successCount"], r["failCount"]) for r in rows] == [
        ("broker-a", 5, 0),
        ("broker-b", 5, 0),
    ]
    assert all(r["avgRtMs"] > 0 for r in rows)
    status = orbitmq.json("admin", "sendMsgStatus", "-b", "broker-b", "-c", "3")
    assert (status["successCount"], status["failCount"]) == (3, 0)
    assert "'Nope' is not known" in orbitmq.error("admin", "clusterRT", "-c", "Nope")


def test_the_name_server_comes_from_namesrv_addr_unless_n_is_given(
    cluster: ThreadedCluster,
) -> None:
    env = {"NAMESRV_ADDR": cluster.namesrv_addr}
    result = CliRunner().invoke(cli, ["admin", "clusterList", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert [r["brokerName"] for r in json.loads(result.stdout)] == ["broker-a", "broker-b"]
    unreachable = CliRunner().invoke(cli, ["admin", "topicList", "-n", "127.0.0.1:1"], env=env)
    assert unreachable.exit_code == 1
    assert unreachable.stdout == ""
    assert unreachable.stderr.splitlines() == [
        "orbitmq: error: no name server answered: 127.0.0.1:1: connect to 127.0.0.1:1 failed:"
        " connection refused; check namesrv_addr and that the name server is running"
    ]


def test_a_real_process_reads_namesrv_addr_and_prints_json(
    cluster: ThreadedCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NAMESRV_ADDR", cluster.namesrv_addr)
    done = run_orbitmq("admin", "topicRoute", "-t", "broker-a", "--json")
    assert done.returncode == 0, done.stderr
    assert [b["brokerName"] for b in json.loads(done.stdout)["brokerDatas"]] == ["broker-a"]
    done = run_orbitmq("admin", "resetOffsetByTime", "-g", "g", "-t", "broker-a", "-s", "soon")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "orbitmq: error: -s/--timestamp: 'soon' is not a time"
        " (now, epoch milliseconds, yyyy-MM-dd#HH:mm:ss:SSS or ISO 8601)"
    ]


def test_update_topic_sets_rocketmq_5_attributes_that_topic_status_shows(
    orbitmq: Orbitmq,
) -> None:
    created = orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", "Typed",
                           "-w", "1", "-r", "1", "-a", "+message.type=FIFO")  # fmt: skip
    assert {row["attributes"] for row in created} == {"+message.type=FIFO"}
    status = orbitmq.json("admin", "topicStatus", "-t", "Typed")
    assert {(s["brokerName"], s["attributes"]) for s in status} == {
        ("broker-a", "message.type=FIFO"),
        ("broker-b", "message.type=FIFO"),
    }
    orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", "Typed", "-w", "1",
                 "-r", "1", "-a", "-message.type")  # fmt: skip
    status = orbitmq.json("admin", "topicStatus", "-t", "Typed")
    assert {s["attributes"] for s in status} == {""}
    # Refused by the client before any broker is asked, naming the piece and the syntax.
    line = orbitmq.error("admin", "updateTopic", "-c", "DefaultCluster", "-t", "Typed",
                         "-a", "message.type=FIFO")  # fmt: skip
    assert "attributes: add/alter attribute format is wrong: 'message.type=FIFO'" in line
    # Refused by the brokers: the value is not one of the set.
    line = orbitmq.error("admin", "updateTopic", "-c", "DefaultCluster", "-t", "Typed",
                         "-a", "+message.type=SOMETIMES")  # fmt: skip
    assert "value is not in set: message.type='SOMETIMES'" in line
