"""A slave broker learns its master's HA address from the name server's answer to its
REGISTER_BROKER (brokerIP2:haListenPort, registered by the master) and copies its log."""

from __future__ import annotations

from pathlib import Path

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.store import BrokerRole, MessageStoreConfig
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async
from tests.support import make_message


async def test_a_slave_broker_replicates_from_the_master_the_name_server_names(
    tmp_path: Path,
) -> None:
    async with InProcessCluster(tmp_path / "cluster") as cluster:
        master = cluster.brokers[0]
        assert master.replication.ha_service is not None
        ha_port = master.replication.ha_service.port
        assert master.replication.ha_server_addr == f"127.0.0.1:{ha_port}"
        for i in range(20):
            assert master.message_store.put_message(make_message(body=b"m%d" % i)).is_ok
        slave = BrokerController(
            BrokerConfig(
                broker_name="broker-a",
                broker_id=1,
                bind_address="127.0.0.1",
                listen_port=0,
                namesrv_addr=cluster.namesrv_addr,
            ),
            MessageStoreConfig(
                store_path_root_dir=str(tmp_path / "slave"),
                broker_role=BrokerRole.SLAVE,
                mapped_file_size_commit_log=16 * 1024 * 1024,
                max_hash_slot_num=50_000,
                max_index_num=200_000,
                ha_send_heartbeat_interval=200,
            ),
        )
        await slave.start()
        try:
            client = slave.replication.ha_client
            assert client is not None
            assert client.master_address == f"127.0.0.1:{ha_port}"
            await eventually_async(
                lambda: slave.message_store.max_phy_offset == master.message_store.max_phy_offset,
                what="the slave's log at the master's end",
            )
        finally:
            await slave.stop()
