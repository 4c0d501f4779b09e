"""Half messages and END_TRANSACTION (R35's store part) on a real in-process broker: a half
is invisible until committed, a commit makes it visible once however often it is sent
(across a restart too), a rollback never, and a verdict for the wrong half is refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from orbitmq.client import (
    LocalTransactionState,
    MQBrokerError,
    Producer,
    SendResult,
    TransactionVerdict,
    queue_offsets,
    read_queue_range,
)
from orbitmq.common import (
    Message,
    MessageQueue,
    decode_message_id,
    encode_batch_messages,
    message_properties_to_string,
)
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.topic import RMQ_SYS_TRANS_HALF_TOPIC
from orbitmq.protocol import ResponseCode
from orbitmq.protocol.header import EndTransactionRequestHeader, SendMessageRequestHeader
from orbitmq.testing import InProcessCluster

pytestmark = pytest.mark.timeout(90)

GROUP = "tx-pg"


async def send_half(
    producer: Producer, body: bytes | list[bytes], queue_id: int
) -> EndTransactionRequestHeader:
    """Stage ``body`` (a list: as one batch) as a half message for TxTopic's queue; the
    header that resolves it."""
    staged: Message | list[Message]
    if isinstance(body, bytes):
        staged = Message("TxTopic", body)
        staged.tags = "TagTx"
    else:
        staged = [Message("TxTopic", b, properties={mc.PROPERTY_TAGS: "TagTx"}) for b in body]
    result = await producer.send_half(staged, MessageQueue("TxTopic", "broker-a", queue_id))
    _host, commit_log_offset = decode_message_id(result.offset_msg_id)
    return EndTransactionRequestHeader(
        producer_group=GROUP,
        tran_state_table_offset=result.queue_offset,
        commit_log_offset=commit_log_offset,
        commit_or_rollback=sf.TRANSACTION_COMMIT_TYPE,
        msg_id=result.msg_id,
        transaction_id=result.msg_id,
    )


async def end(
    cluster: InProcessCluster, producer: Producer, header: EndTransactionRequestHeader
) -> None:
    addr = cluster.brokers[0].address
    await producer.instance.api.end_transaction(addr, header, 5.0)


async def visible(cluster: InProcessCluster, queue_id: int) -> list[bytes]:
    """Bodies stored in TxTopic's queue, once the consume queue has them all."""
    low, high = (await queue_offsets(cluster.namesrv_addr, "TxTopic"))[
        MessageQueue("TxTopic", "broker-a", queue_id)
    ]
    return [
        m.body
        async for batch in read_queue_range(
            cluster.namesrv_addr, "TxTopic", "broker-a", queue_id, low, high
        )
        for m in batch
    ]


async def settle(cluster: InProcessCluster) -> None:
    store = cluster.brokers[0].message_store
    assert store.reput_message_service.wait_for_dispatch(store.commit_log.max_offset, 10)


async def test_commit_makes_a_half_visible_once_and_rollback_never(tmp_path: Path) -> None:
    async with (
        InProcessCluster(tmp_path / "c") as cluster,
        Producer(GROUP, namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        await producer.send(
            Message("TxTopic", b"plain"), queue=MessageQueue("TxTopic", "broker-a", 1)
        )
        committed = await send_half(producer, b"to-commit", 1)
        rolled_back = await send_half(producer, b"to-roll-back", 1)
        await settle(cluster)
        assert await visible(cluster, 1) == [b"plain"]  # halves are invisible
        store = cluster.brokers[0].message_store
        half = store.look_message_by_offset(committed.commit_log_offset)
        assert half is not None and half.topic == RMQ_SYS_TRANS_HALF_TOPIC
        assert half.properties[mc.PROPERTY_REAL_TOPIC] == "TxTopic"
        assert half.properties[mc.PROPERTY_REAL_QUEUE_ID] == "1"

        await end(cluster, producer, committed)
        await end(cluster, producer, committed)  # a retried commit: no second copy
        rolled_back = replace(rolled_back, commit_or_rollback=sf.TRANSACTION_ROLLBACK_TYPE)
        await end(cluster, producer, rolled_back)
        await settle(cluster)
        assert await visible(cluster, 1) == [b"plain", b"to-commit"]
        [final] = [
            m
            async for b in read_queue_range(cluster.namesrv_addr, "TxTopic", "broker-a", 1, 1, 2)
            for m in b
        ]
        assert final.unique_key == committed.msg_id and final.tags == "TagTx"
        assert final.prepared_transaction_offset == committed.commit_log_offset
        assert mc.PROPERTY_TRANSACTION_PREPARED not in final.properties
        assert mc.PROPERTY_REAL_TOPIC not in final.properties

        wrong = EndTransactionRequestHeader(
            producer_group="someone-else",
            tran_state_table_offset=rolled_back.tran_state_table_offset,
            commit_log_offset=rolled_back.commit_log_offset,
            commit_or_rollback=sf.TRANSACTION_COMMIT_TYPE,
            msg_id=rolled_back.msg_id,
        )
        with pytest.raises(MQBrokerError, match="producer group wrong"):
            await end(cluster, producer, wrong)
        nowhere = replace(committed, commit_log_offset=committed.commit_log_offset + 1)
        with pytest.raises(MQBrokerError, match="Find prepared transaction message failed"):
            await end(cluster, producer, nowhere)


async def test_end_transactions_sends_each_verdict_as_the_header_rocketmq_expects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with (
        InProcessCluster(tmp_path / "c") as cluster,
        Producer(GROUP, namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        mq = MessageQueue("TxTopic", "broker-a", 0)
        kept = [await producer.send_half(Message("TxTopic", b"keep-%d" % i), mq) for i in range(3)]
        dropped = await producer.send_half(Message("TxTopic", b"drop"), mq)
        sent: list[dict[str, str]] = []
        end_transaction = producer.instance.api.end_transaction

        async def recorded(
            addr: str, header: EndTransactionRequestHeader, timeout_s: float
        ) -> None:
            sent.append(header.to_ext_fields())
            await end_transaction(addr, header, timeout_s)

        monkeypatch.setattr(producer.instance.api, "end_transaction", recorded)
        commit, rollback = (
            LocalTransactionState.COMMIT_MESSAGE,
            LocalTransactionState.ROLLBACK_MESSAGE,
        )
        await producer.end_transactions(
            [
                [TransactionVerdict.of_half(r, commit) for r in kept],
                [TransactionVerdict.of_half(dropped, rollback)],
            ]
        )
        await settle(cluster)
        assert await visible(cluster, 0) == [b"keep-0", b"keep-1", b"keep-2"]

    def header(result: SendResult, verdict: int) -> dict[str, str]:
        return EndTransactionRequestHeader(
            producer_group=GROUP,
            tran_state_table_offset=result.queue_offset,
            commit_log_offset=decode_message_id(result.offset_msg_id)[1],
            commit_or_rollback=verdict,
            msg_id=result.msg_id,
            # RocketMQ's endTransaction: the send answer's transaction id (4.9.8's brokers,
            # as ours, give none) and the half's broker name.
            transaction_id=result.transaction_id,
            broker_name="broker-a",
        ).to_ext_fields()

    expected = [header(r, sf.TRANSACTION_COMMIT_TYPE) for r in kept]
    expected.append(header(dropped, sf.TRANSACTION_ROLLBACK_TYPE))
    assert sorted(sent, key=str) == sorted(expected, key=str)
    # A sequence is sent in order.
    assert [h for h in sent if h in expected[:3]] == expected[:3]


async def test_resolved_halves_are_remembered_across_a_restart(tmp_path: Path) -> None:
    async with InProcessCluster(tmp_path / "c") as cluster:
        async with Producer(GROUP, namesrv_addr=cluster.namesrv_addr) as producer:
            header = await send_half(producer, b"once", 2)
            await end(cluster, producer, header)
            await settle(cluster)
        broker = cluster.brokers[0]
        await cluster.stop_broker(broker)
        await cluster.start_broker("broker-a")
        async with Producer(GROUP, namesrv_addr=cluster.namesrv_addr) as producer:
            await end(cluster, producer, header)  # commit again after the restart
            await settle(cluster)
        assert await visible(cluster, 2) == [b"once"]


async def test_a_staged_batch_is_one_half_and_one_verdict_stores_it_whole(
    tmp_path: Path,
) -> None:
    async with (
        InProcessCluster(tmp_path / "c") as cluster,
        Producer(GROUP, namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        bodies = [f"row-{i}".encode() for i in range(50)]
        committed = await send_half(producer, bodies, 3)
        rolled_back = await send_half(producer, [b"dropped-1", b"dropped-2"], 3)
        await settle(cluster)
        assert await visible(cluster, 3) == []
        store = cluster.brokers[0].message_store
        half = store.look_message_by_offset(committed.commit_log_offset)
        assert half is not None and half.topic == RMQ_SYS_TRANS_HALF_TOPIC
        assert half.properties[mc.PROPERTY_HALF_BATCH] == "50"
        assert rolled_back.tran_state_table_offset == committed.tran_state_table_offset + 1

        await end(cluster, producer, committed)
        await end(cluster, producer, committed)  # a retried commit: no second copy
        rolled_back = replace(rolled_back, commit_or_rollback=sf.TRANSACTION_ROLLBACK_TYPE)
        await end(cluster, producer, rolled_back)
        await settle(cluster)
        assert await visible(cluster, 3) == bodies
        stored = [
            m
            async for b in read_queue_range(cluster.namesrv_addr, "TxTopic", "broker-a", 3, 0, 50)
            for m in b
        ]
        assert [m.queue_offset for m in stored] == list(range(50))
        assert len({m.unique_key for m in stored}) == 50 and all(m.tags == "TagTx" for m in stored)
        for m in stored:
            assert m.prepared_transaction_offset == committed.commit_log_offset
            assert sf.transaction_value(m.sys_flag) == sf.TRANSACTION_COMMIT_TYPE
            for staged_only in (
                mc.PROPERTY_TRANSACTION_PREPARED,
                mc.PROPERTY_HALF_BATCH,
                mc.PROPERTY_REAL_TOPIC,
                mc.PROPERTY_REAL_QUEUE_ID,
            ):
                assert staged_only not in m.properties


async def test_a_malformed_staged_batch_is_refused_when_sent_not_when_committed(
    tmp_path: Path,
) -> None:
    async with (
        InProcessCluster(tmp_path / "c") as cluster,
        Producer(GROUP, namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        body = encode_batch_messages([Message("TxTopic", b"a"), Message("TxTopic", b"b")])
        properties = {mc.PROPERTY_TRANSACTION_PREPARED: "true", mc.PROPERTY_PRODUCER_GROUP: GROUP}
        header = SendMessageRequestHeader(
            producer_group=GROUP,
            topic="TxTopic",
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=0,
            sys_flag=sf.TRANSACTION_PREPARED_TYPE,
            born_timestamp=0,
            flag=0,
            properties=message_properties_to_string(properties),
            batch=True,
        )
        await producer.send(
            Message("TxTopic", b"plain"), queue=MessageQueue("TxTopic", "broker-a", 0)
        )
        addr = cluster.brokers[0].address
        api = producer.instance.api
        with pytest.raises(MQBrokerError, match="staged batch is refused") as refused:
            await api.send_message(addr, "broker-a", header, body[:-3], "", 5.0)
        assert refused.value.code == ResponseCode.MESSAGE_ILLEGAL
        forged = message_properties_to_string({**properties, mc.PROPERTY_HALF_BATCH: "2"})
        one = replace(header, batch=False, properties=forged)
        with pytest.raises(MQBrokerError, match="the broker's to set"):
            await api.send_message(addr, "broker-a", one, b"one", "", 5.0)
        store = cluster.brokers[0].message_store
        assert store.get_max_offset_in_queue(RMQ_SYS_TRANS_HALF_TOPIC, 0) == 0


async def test_a_staged_batch_that_could_not_be_committed_is_refused_when_sent(
    tmp_path: Path,
) -> None:
    # 20 messages of 100 bytes: a half of about 3,800 bytes fits under 4,096, the same
    # messages stored one record each (fixed fields, topic, properties) do not. Staged, the
    # commit would fail after the half had been acknowledged.
    settings = {"max_message_size": 4096}
    async with (
        InProcessCluster(tmp_path / "c", store_settings=settings) as cluster,
        Producer(GROUP, namesrv_addr=cluster.namesrv_addr) as producer,
    ):
        rows = [b"r" * 100] * 20
        with pytest.raises(MQBrokerError, match="over maxMessageSize 4096") as refused:
            await send_half(producer, rows, 0)
        assert refused.value.code == ResponseCode.MESSAGE_ILLEGAL
        committed = await send_half(producer, rows[:10], 0)  # fewer at a time fit
        await end(cluster, producer, committed)
        await settle(cluster)
        assert await visible(cluster, 0) == rows[:10]
