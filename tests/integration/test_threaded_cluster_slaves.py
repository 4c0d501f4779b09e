"""``ThreadedCluster(slaves=1)``: users' blocking tests get a slave per broker group, registered
under brokerId 1 beside its master."""

from __future__ import annotations

from pathlib import Path

from orbitmq.testing import ThreadedCluster


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
