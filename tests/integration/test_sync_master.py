"""A SYNC_MASTER broker and its slave with our producer (issue 16 §3): SEND_OK only once the
slave holds the message; SLAVE_NOT_AVAILABLE with the slave gone and FLUSH_SLAVE_TIMEOUT
with a slave that does not answer reach the producer's SendResult, with the message's id,
queue and offset (it is stored on the master and replicates later)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker import BrokerController
from orbitmq.client import Producer, SendResult, SendStatus
from orbitmq.common import Message
from orbitmq.common.message_decoder import decode_message
from orbitmq.store import BrokerRole, FlushDiskType
from orbitmq.store.ha import encode_report
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async

TOPIC = "SyncMasterTopic"


@pytest.fixture
async def pair(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    async with InProcessCluster(
        tmp_path,
        slaves=1,
        store_settings={
            "broker_role": BrokerRole.SYNC_MASTER,
            "flush_disk_type": FlushDiskType.SYNC_FLUSH,
            "slave_timeout": 500,
            "ha_send_heartbeat_interval": 200,
        },
    ) as cluster:
        yield cluster


def master_of(cluster: InProcessCluster) -> BrokerController:
    return next(b for b in cluster.brokers if b.broker_config.broker_id == 0)


def stored_body(master: BrokerController, result: SendResult) -> bytes:
    """The body the master stores where ``result`` says, checked by its offset message id."""
    mq = result.message_queue
    got = master.message_store.get_message("check", mq.topic, mq.queue_id, result.queue_offset, 1)
    (buffer,) = got.message_buffers
    message = decode_message(buffer)
    assert message.msg_id == result.offset_msg_id
    return message.body


async def test_send_ok_means_the_slave_holds_the_message(pair: InProcessCluster) -> None:
    master = master_of(pair)
    (slave,) = pair.slaves_of("broker-a")
    ha = master.replication.ha_service
    assert ha is not None
    await eventually_async(lambda: len(ha.connections) == 1, what="the slave connected")
    async with Producer("SyncGroup", namesrv_addr=pair.namesrv_addr) as producer:
        for i in range(20):
            result = await producer.send(Message(TOPIC, b"m%d" % i))
            assert result.send_status is SendStatus.SEND_OK
            # The answer waited for the slave's report: its log holds the message already.
            commit_log_offset = int(result.offset_msg_id[-16:], 16)
            copied = slave.message_store.look_message_by_offset(commit_log_offset)
            assert copied is not None and copied.body == b"m%d" % i


async def test_slave_gone_and_silent_slave_reach_the_send_result(pair: InProcessCluster) -> None:
    master = master_of(pair)
    (slave,) = pair.slaves_of("broker-a")
    ha = master.replication.ha_service
    assert ha is not None
    async with Producer("SyncGroup", namesrv_addr=pair.namesrv_addr) as producer:
        await eventually_async(lambda: len(ha.connections) == 1, what="the slave connected")
        assert (await producer.send(Message(TOPIC, b"warm"))).send_status is SendStatus.SEND_OK
        await pair.stop_broker(slave)
        await eventually_async(lambda: not ha.connections, what="the master saw it go")

        alone = await producer.send(Message(TOPIC, b"alone"))
        assert alone.send_status is SendStatus.SLAVE_NOT_AVAILABLE
        assert alone.msg_id and alone.queue_offset >= 0
        assert stored_body(master, alone) == b"alone"

        # A slave that connects, reports once and then says nothing more.
        with socket.create_connection(("127.0.0.1", ha.port)) as raw:
            raw.sendall(encode_report(master.message_store.max_phy_offset))
            await eventually_async(lambda: len(ha.connections) == 1, what="silent slave")
            late = await producer.send(Message(TOPIC, b"late"))
        assert late.send_status is SendStatus.FLUSH_SLAVE_TIMEOUT
        assert stored_body(master, late) == b"late"

        slave = await pair.start_slave("broker-a")
        await eventually_async(
            lambda: slave.message_store.max_phy_offset == master.message_store.max_phy_offset,
            what="the slave caught up with what it missed",
        )
        back = await producer.send(Message(TOPIC, b"back"))
        assert back.send_status is SendStatus.SEND_OK
