"""POP consumption against a real broker over remoting (RocketMQ 5's POP_MESSAGE, ACK,
BATCH_ACK, CHANGE_MESSAGE_INVISIBLETIME, PEEK, NOTIFICATION, POLLING_INFO): invisibility,
acks, revive to the retry topic and then the DLQ (a ManualClock moves time), FIFO blocking,
long polling, and the clear answers to bad input."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker import BrokerController
from orbitmq.common import MessageQueue
from orbitmq.common import message_const as mc
from orbitmq.common.key_builder import build_pop_retry_topic
from orbitmq.protocol import ConsumeStats, RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import BatchAck, BatchAckMessageRequestBody, ConsumeType
from orbitmq.protocol.header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
)
from orbitmq.protocol.pop_extra_info import ExtraInfo
from tests.component.broker.pop_support import (
    PopBroker,
    PopBrokerFactory,
    pop_broker_fixture,
    pop_request,
)
from tests.eventually import eventually_async

TOPIC = "PopTopic"


@pytest.fixture
async def pop_factory(tmp_path: Path) -> AsyncIterator[PopBrokerFactory]:
    async for factory in pop_broker_fixture(tmp_path):
        yield factory


@pytest.fixture
async def pb(pop_factory: PopBrokerFactory) -> PopBroker:
    return await pop_factory()


async def test_pop_hides_messages_until_acked_or_revived(pb: PopBroker) -> None:
    for i in range(5):
        await pb.send(TOPIC, f"m{i}".encode(), queue_id=i % 2)
    first = await pb.pop(TOPIC, max_msg_nums=3)
    assert first.code == ResponseCode.SUCCESS
    assert len(first.messages) == 3
    second = await pb.pop(TOPIC, max_msg_nums=32)
    assert len(second.messages) == 2
    assert sorted(first.bodies + second.bodies) == [f"m{i}".encode() for i in range(5)]
    # Everything is invisible now: an empty POP answers POLLING_TIMEOUT.
    assert (await pb.pop(TOPIC)).code == ResponseCode.POLLING_TIMEOUT
    # One check point per queue per POP, not per message.
    queues = len({m.queue_id for m in first.messages}) + len({m.queue_id for m in second.messages})
    assert pb.broker.pop.revive_service.in_flight == queues
    for message in first.messages:
        assert (await pb.ack(message)).code == ResponseCode.SUCCESS
    assert await pb.revive(30_001) == 2
    again = await pb.pop(TOPIC)
    assert sorted(again.bodies) == sorted(second.bodies)
    for message in again.messages:
        assert message.reconsume_times == 1
        assert message.topic == TOPIC
        assert ExtraInfo.parse(message.properties[mc.PROPERTY_POP_CK]).retry == "1"
        assert (await pb.ack(message)).code == ResponseCode.SUCCESS
    assert await pb.revive(60_000) == 0
    assert (await pb.pop(TOPIC)).code == ResponseCode.POLLING_TIMEOUT


async def test_unacked_goes_to_retry_then_dlq_after_retry_max_times(pb: PopBroker) -> None:
    group_config = pb.broker.subscription_group_manager.find_subscription_group_config("cg")
    assert group_config is not None
    group_config.retry_max_times = 2
    await pb.send(TOPIC, b"doomed")
    seen = []
    for _ in range(3):
        answer = await pb.pop(TOPIC, invisible_ms=1000)
        assert answer.bodies == [b"doomed"]
        seen.append(answer.messages[0].reconsume_times)
        await pb.revive(1001)
    assert seen == [0, 1, 2]
    assert pb.broker.pop.revive_service.dlq_count == 1
    assert (await pb.pop(TOPIC)).code == ResponseCode.POLLING_TIMEOUT
    store = pb.broker.message_store
    assert store.get_max_offset_in_queue("%DLQ%cg", 0) == 1
    retry = build_pop_retry_topic(TOPIC, "cg")
    assert store.get_max_offset_in_queue(retry, 0) == 2


async def test_ack_after_revive_is_success_and_changes_nothing(pb: PopBroker) -> None:
    await pb.send(TOPIC, b"late")
    answer = await pb.pop(TOPIC, invisible_ms=1000)
    await pb.revive(1001)
    # RocketMQ answers an ack of a revived message SUCCESS; the retry copy still comes.
    assert (await pb.ack(answer.messages[0])).code == ResponseCode.SUCCESS
    assert (await pb.pop(TOPIC)).bodies == [b"late"]


async def test_change_invisible_time_returns_new_times_and_delays_revive(pb: PopBroker) -> None:
    await pb.send(TOPIC, b"slow")
    message = (await pb.pop(TOPIC, invisible_ms=1000)).messages[0]
    pb.clock.advance(500)
    response = await pb.change_invisible(message, 10_000)
    assert response.code == ResponseCode.SUCCESS, response.remark
    changed = ChangeInvisibleTimeResponseHeader.from_ext_fields(response.ext_fields)
    assert changed.pop_time == pb.clock.now_ms() and changed.invisible_time == 10_000
    old = ExtraInfo.parse(message.properties[mc.PROPERTY_POP_CK])
    new = old.changed(message.queue_offset, changed.pop_time, 10_000, changed.revive_qid)
    assert await pb.revive(1000) == 0  # past the old deadline: still invisible
    message.properties[mc.PROPERTY_POP_CK] = str(new)
    assert (await pb.ack(message)).code == ResponseCode.SUCCESS
    assert await pb.revive(20_000) == 0
    # The old receipt names a check point no longer holding the message.
    message.properties[mc.PROPERTY_POP_CK] = str(old)
    assert (await pb.change_invisible(message, 1000)).code == ResponseCode.NO_MESSAGE


async def test_batch_ack(pb: PopBroker) -> None:
    for i in range(4):
        await pb.send(TOPIC, f"b{i}".encode())
    answer = await pb.pop(TOPIC, queue_id=0)
    extra = ExtraInfo.parse(answer.messages[0].properties[mc.PROPERTY_POP_CK])
    ack = BatchAck(
        consumer_group="cg",
        topic=TOPIC,
        retry="0",
        start_offset=extra.ck_queue_offset,
        queue_id=0,
        revive_queue_id=extra.revive_qid,
        pop_time=extra.pop_time,
        invisible_time=extra.invisible_time,
    )
    ack.set_offsets([m.queue_offset for m in answer.messages[:3]])
    body = BatchAckMessageRequestBody(broker_name="broker-a", acks=[ack]).to_json()
    request = RemotingCommand.create_request(RequestCode.BATCH_ACK_MESSAGE, {}, body)
    assert (await pb.invoke(request)).code == ResponseCode.SUCCESS
    assert await pb.revive(30_001) == 1
    assert (await pb.pop(TOPIC)).bodies == [b"b3"]
    empty = RemotingCommand.create_request(RequestCode.BATCH_ACK_MESSAGE, {}, b"")
    assert (await pb.invoke(empty)).code == ResponseCode.NO_MESSAGE


async def test_fifo_pop_blocks_the_queue_until_acked_or_expired(pb: PopBroker) -> None:
    for i in range(4):
        await pb.send(TOPIC, f"f{i}".encode(), queue_id=0)
    first = await pb.pop(TOPIC, queue_id=0, max_msg_nums=2, order=True, invisible_ms=5000)
    assert first.bodies == [b"f0", b"f1"]
    assert first.header.revive_qid == 999
    # Blocked: the next messages wait for the batch.
    assert (await pb.pop(TOPIC, queue_id=0, order=True)).code == ResponseCode.POLLING_TIMEOUT
    assert (await pb.ack(first.messages[0])).code == ResponseCode.SUCCESS
    assert (await pb.pop(TOPIC, queue_id=0, order=True)).code == ResponseCode.POLLING_TIMEOUT
    # The invisible time passes with f1 unacked: f1 comes again, counted, before f2.
    pb.clock.advance(5001)
    again = await pb.pop(TOPIC, queue_id=0, max_msg_nums=2, order=True)
    assert again.bodies == [b"f1", b"f2"]
    assert "1" in (again.header.order_count_info or "")
    for message in again.messages:
        assert (await pb.ack(message)).code == ResponseCode.SUCCESS
    assert (await pb.pop(TOPIC, queue_id=0, order=True)).bodies == [b"f3"]
    offset = pb.broker.consumer_offset_manager.query_offset("cg", TOPIC, 0)
    assert offset == 3


async def test_long_polling_is_woken_by_a_send(pb: PopBroker) -> None:
    request = pop_request(TOPIC, poll_ms=10_000, born_time=pb.clock.now_ms())
    await pb.send(TOPIC, b"first")  # the topic exists
    await pb.pop(TOPIC)
    waiting = asyncio.create_task(pb.invoke(request, 15.0))
    long_polling = pb.broker.pop.long_polling
    await eventually_async(lambda: long_polling.held_count == 1)
    info = PollingInfoRequestHeader(consumer_group="cg", topic=TOPIC, queue_id=-1)
    polled = await pb.invoke(
        RemotingCommand.create_request(RequestCode.POLLING_INFO, info.to_ext_fields())
    )
    assert PollingInfoResponseHeader.from_ext_fields(polled.ext_fields).polling_num == 1
    await pb.send(TOPIC, b"wake", queue_id=1)
    response = await asyncio.wait_for(waiting, 5.0)
    assert response.code == ResponseCode.SUCCESS
    assert long_polling.held_count == 0


async def test_long_polling_times_out(pb: PopBroker) -> None:
    await pb.send(TOPIC, b"x")
    await pb.pop(TOPIC)
    response = await pb.invoke(pop_request(TOPIC, poll_ms=200, born_time=pb.clock.now_ms()))
    assert response.code == ResponseCode.POLLING_TIMEOUT


async def test_notification_and_peek(pb: PopBroker) -> None:
    await pb.send(TOPIC, b"peeked")
    peek = PeekMessageRequestHeader(consumer_group="cg", topic=TOPIC, queue_id=0, max_msg_nums=4)
    request = RemotingCommand.create_request(RequestCode.PEEK_MESSAGE, peek.to_ext_fields())
    for _ in range(2):  # peeking pops nothing
        peeked = await pb.invoke(request)
        assert peeked.code == ResponseCode.SUCCESS
    note = NotificationRequestHeader(
        consumer_group="cg", topic=TOPIC, queue_id=-1, poll_time=0, born_time=0
    )
    notify = RemotingCommand.create_request(RequestCode.NOTIFICATION, note.to_ext_fields())
    answer = NotificationResponseHeader.from_ext_fields((await pb.invoke(notify)).ext_fields)
    assert answer.has_msg
    assert (await pb.pop(TOPIC)).bodies == [b"peeked"]
    answer = NotificationResponseHeader.from_ext_fields((await pb.invoke(notify)).ext_fields)
    assert not answer.has_msg
    assert (await pb.invoke(request)).code == ResponseCode.PULL_NOT_FOUND


async def test_tag_filter(pb: PopBroker) -> None:
    await pb.send(TOPIC, b"a", tags="A")
    await pb.send(TOPIC, b"b", tags="B")
    answer = await pb.pop(TOPIC, exp="B", exp_type="TAG")
    assert answer.bodies == [b"b"]


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ("garbage", "fields"),
        ("0 1 2 3 0 other-broker 0 0", "broker other-broker"),
        ("0 1 2 77 0 broker-a 0 0", "revive queue 77"),
        ("x 1 2 0 0 broker-a 0 0", "check point offset"),
    ],
)
async def test_forged_or_foreign_extra_info_is_a_clear_error(
    pb: PopBroker, extra: str, problem: str
) -> None:
    await pb.send(TOPIC, b"x")
    header = AckMessageRequestHeader(
        consumer_group="cg", topic=TOPIC, queue_id=0, extra_info=extra, offset=0
    )
    request = RemotingCommand.create_request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
    response = await pb.invoke(request)
    assert response.code == ResponseCode.INVALID_PARAMETER
    assert problem in (response.remark or "")
    assert (await pb.pop(TOPIC)).bodies == [b"x"]  # the broker is fine


async def test_bad_pops_are_refused_clearly(pb: PopBroker) -> None:
    await pb.send(TOPIC, b"x")
    huge = await pb.pop(TOPIC, max_msg_nums=1000)
    assert huge.code == ResponseCode.INVALID_PARAMETER
    assert "greater than 32" in (huge.response.remark or "")
    assert (await pb.pop("NoSuchTopic")).code == ResponseCode.TOPIC_NOT_EXIST
    assert (await pb.pop(TOPIC, queue_id=99)).code == ResponseCode.INVALID_PARAMETER
    assert (await pb.pop(TOPIC, invisible_ms=0)).code == ResponseCode.INVALID_PARAMETER
    late = await pb.invoke(pop_request(TOPIC, born_time=pb.clock.now_ms() - 60_000))
    assert late.code == ResponseCode.POLLING_TIMEOUT
    bad_sql = await pb.pop(TOPIC, exp="a >", exp_type="SQL92")
    assert bad_sql.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert (await pb.pop(TOPIC)).bodies == [b"x"]


async def test_pop_groups_show_to_admin_tools_as_in_rocketmq(pb: PopBroker) -> None:
    for i in range(3):
        await pb.send(TOPIC, f"s{i}".encode(), queue_id=0)
    answer = await pb.pop(TOPIC, queue_id=0, max_msg_nums=2)
    assert len(answer.messages) == 2
    stats_request = RemotingCommand.create_request(
        RequestCode.GET_CONSUME_STATS,
        GetConsumeStatsRequestHeader(consumer_group="cg").to_ext_fields(),
    )
    stats = ConsumeStats.from_json((await pb.invoke(stats_request)).body)
    # POP moves the group's offset as it hands messages out (RocketMQ 5 does the same).
    wrapper = stats.offset_table[MessageQueue(TOPIC, "broker-a", 0)]
    assert (wrapper.broker_offset, wrapper.consumer_offset) == (3, 2)
    # A POP group registers no consumer: the consumer list is RocketMQ's "not online" answer.
    listed = await pb.invoke(
        RemotingCommand.create_request(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP,
            GetConsumerListByGroupRequestHeader(consumer_group="cg").to_ext_fields(),
        )
    )
    assert listed.code != ResponseCode.SUCCESS
    manager = pb.broker.consumer_manager
    assert manager.find_subscription_data("cg", TOPIC) is not None  # compensated
    info = manager.compensation_table["cg"]
    assert info.consume_type is ConsumeType.CONSUME_POP


async def test_check_points_and_acks_survive_a_restart(pop_factory: PopBrokerFactory) -> None:
    pb = await pop_factory()
    for i in range(4):
        await pb.send(TOPIC, f"r{i}".encode(), queue_id=0)
    answer = await pb.pop(TOPIC, queue_id=0, invisible_ms=60_000)
    await pb.ack(answer.messages[0])
    await pb.ack(answer.messages[2])
    await pb.broker.stop()
    broker = BrokerController(pb.broker.broker_config, pb.broker.store_config, clock=pb.clock)
    await broker.start()
    pb.broker = broker  # the fixture stops this one
    revive = broker.pop.revive_service
    assert revive.in_flight == 1  # replayed from the revive log with its two acks
    assert await pb.revive(60_001) == 2
    again = await pb.pop(TOPIC, queue_id=0)
    assert sorted(again.bodies) == [b"r1", b"r3"]
