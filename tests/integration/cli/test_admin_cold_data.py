"""``orbitmq admin``'s cold data flow control commands (RocketMQ 5's mqadmin
getColdDataFlowCtrInfo, updateColdDataFlowCtrGroupConfig, removeColdDataFlowCtrGroupConfig,
setCommitLogReadAheadMode) against running brokers, read back from ``--json`` and from the
brokers themselves."""

from __future__ import annotations

from orbitmq.testing import ThreadedCluster
from tests.integration.cli.conftest import Orbitmq

CLUSTER = "DefaultCluster"


def test_group_thresholds_and_cold_reads_are_shown_and_changed(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    broker = cluster.cluster.brokers[0]
    a = broker.address
    service = broker.pull_message_processor.cold_data.cold_data_cg_ctr_service

    async def cold_read() -> None:
        service.cold_acc("Reader", 4096)

    cluster.call(cold_read())
    rows = orbitmq.json(
        "admin", "updateColdDataFlowCtrGroupConfig", "-b", a, "-g", "Reader", "-v", "1048576"
    )
    assert rows == [{"brokerAddr": a, "result": "updateColdDataFlowCtrGroupConfig success"}]
    info = orbitmq.json("admin", "getColdDataFlowCtrInfo", "-b", a)[a]
    assert info["configTable"] == {"Reader": 1048576}
    assert info["cgColdReadThreshold"] == 3 * 1024 * 1024
    assert info["globalAcc"] == 4096
    reader = info["runtimeTable"]["Reader"]
    assert reader["coldAcc"] == 4096
    assert reader["lastColdReadTimeFormat"] and reader["createTimeFormat"]  # dates, as mqadmin
    table = orbitmq.run("admin", "getColdDataFlowCtrInfo", "-b", a)
    assert table.exit_code == 0 and "Reader" in table.stdout and "globalAcc" in table.stdout

    orbitmq.json("admin", "removeColdDataFlowCtrGroupConfig", "-c", CLUSTER, "-g", "Reader")
    infos = orbitmq.json("admin", "getColdDataFlowCtrInfo", "-c", CLUSTER)
    assert len(infos) == 2
    assert all(i["configTable"] == {} for i in infos.values())


def test_set_commit_log_read_ahead_mode(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    broker = cluster.cluster.brokers[0]
    a = broker.address
    rows = orbitmq.json("admin", "setCommitLogReadAheadMode", "-b", a, "-m", "1")
    assert rows == [{"brokerAddr": a, "result": "set commitlog readahead mode success, mode: 1"}]
    assert not broker.message_store.config.data_read_ahead_enable
    orbitmq.json("admin", "setCommitLogReadAheadMode", "-b", a, "-m", "0")
    assert broker.message_store.config.data_read_ahead_enable
    assert orbitmq.run("admin", "setCommitLogReadAheadMode", "-b", a, "-m", "2").exit_code != 0
