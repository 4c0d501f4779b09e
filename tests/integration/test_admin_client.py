"""The AdminClient (mqadmin's operations) against an in-process name server and brokers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import pytest

from orbitmq.client import (
    ConsumeContext,
    MQClientError,
    NoRouteError,
    Producer,
    PushConsumer,
    SendResult,
)
from orbitmq.client.admin_client import AdminClient
from orbitmq.common import Message, MessageExt, MessageQueue, UniqueIdGenerator
from orbitmq.common import message_const as mc
from orbitmq.common.topic import retry_topic
from orbitmq.protocol import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    SubscriptionData,
)
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async

#: Unique ids as a producer with pid 4242 makes them: the pid fixes how an id decodes.
PID_4242_IDS = UniqueIdGenerator(ip=bytes([127, 0, 0, 1]), pid=4242)
#: The key index and the name servers' routes follow in the background: wait this long.
WAIT_S = 5.0


@pytest.fixture
async def admin(cluster: InProcessCluster) -> AsyncIterator[AdminClient]:
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as client:
        yield client


async def send_to_queues(
    cluster: InProcessCluster, topic: str, queue_ids: list[int], *, spaced: bool = False
) -> list[SendResult]:
    """One message per entry of ``queue_ids``, to that queue of broker-a, keyed ``k<i>``."""
    results = []
    async with Producer("admin_pg", namesrv_addr=cluster.namesrv_addr) as producer:
        for i, queue_id in enumerate(queue_ids):
            msg = Message(topic, b"m%d" % i)
            msg.keys = [f"k{i}"]
            results.append(
                await producer.send(msg, queue=MessageQueue(topic, "broker-a", queue_id))
            )
            if spaced:
                # Store times have millisecond precision: keep consecutive sends apart so a
                # timestamp falls between two of them.
                await asyncio.sleep(0.003)
    return results


async def dispatched(admin: AdminClient, topic: str, results: list[SendResult]) -> None:
    """Wait until the consume queues hold every sent message: the broker answers a send once
    the commit log has it, and builds the consume queues from there in the background."""
    counts: dict[int, int] = {}
    for r in results:
        counts[r.message_queue.queue_id] = counts.get(r.message_queue.queue_id, 0) + 1

    async def done() -> bool:
        status = await admin.topic_status(topic)
        return all(s.max_offset == counts.get(s.queue_id, 0) for s in status)

    await eventually_async(done, WAIT_S)


async def stored_messages(admin: AdminClient, results: list[SendResult]) -> list[MessageExt]:
    return [await admin.view_message(r.offset_msg_id) for r in results]


async def test_create_list_route_and_delete_round_trip(two_brokers: InProcessCluster) -> None:
    async with AdminClient(namesrv_addr=two_brokers.namesrv_addr) as admin:
        brokers = await admin.create_topic("AdminTopic", queue_nums=3)
        assert sorted(brokers) == ["broker-a", "broker-b"]
        assert "AdminTopic" in await admin.list_topics()
        route = await admin.topic_route("AdminTopic")
        assert sorted(
            (q.broker_name, q.read_queue_nums, q.write_queue_nums, q.perm)
            for q in route.queue_datas
        ) == [
            ("broker-a", 3, 3, 6),
            ("broker-b", 3, 3, 6),
        ]

        await admin.delete_topic("AdminTopic")
        assert "AdminTopic" not in await admin.list_topics()
        with pytest.raises(NoRouteError, match="AdminTopic"):
            await admin.topic_route("AdminTopic")
        for broker in two_brokers.brokers:
            assert broker.topic_config_manager.select_topic_config("AdminTopic") is None


async def test_create_topic_defaults_to_eight_queues_and_checks_its_input(
    admin: AdminClient,
) -> None:
    await admin.create_topic("Defaults", cluster="DefaultCluster")
    [queue_data] = (await admin.topic_route("Defaults")).queue_datas
    assert (queue_data.read_queue_nums, queue_data.write_queue_nums) == (8, 8)
    with pytest.raises(MQClientError, match="cluster 'Nowhere' is not known"):
        await admin.create_topic("Other", cluster="Nowhere")
    with pytest.raises(MQClientError, match="outside"):
        await admin.create_topic("bad topic")


async def test_topic_status_shows_offsets_and_last_store_time(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    await admin.create_topic("StatusTopic", queue_nums=3)
    results = await send_to_queues(cluster, "StatusTopic", [0, 0, 0, 0, 0, 1, 1, 1])
    await dispatched(admin, "StatusTopic", results)
    stored = await stored_messages(admin, results)

    status = await admin.topic_status("StatusTopic")
    assert [(s.broker_name, s.queue_id, s.min_offset, s.max_offset) for s in status] == [
        ("broker-a", 0, 0, 5),
        ("broker-a", 1, 0, 3),
        ("broker-a", 2, 0, 0),
    ]
    assert [s.last_update_timestamp_ms for s in status] == [
        stored[4].store_timestamp,
        stored[7].store_timestamp,
        0,
    ]


async def test_consumer_progress_shows_lag_per_queue_and_the_retry_topic(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    await admin.create_topic("ProgressTopic", queue_nums=2)
    results = await send_to_queues(cluster, "ProgressTopic", [0, 0, 0, 0, 1, 1, 1, 1])
    await dispatched(admin, "ProgressTopic", results)
    stored = await stored_messages(admin, results)
    addr = cluster.brokers[0].address
    # A consumer's heartbeat creates the group's %RETRY% topic, as in RocketMQ.
    consumer = ConsumerData(
        group_name="progress_cg",
        consume_type=ConsumeType.CONSUME_PASSIVELY,
        message_model=MessageModel.CLUSTERING,
        consume_from_where=ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        # A clustering consumer subscribes to its retry topic too; the broker reports only
        # topics an online group subscribes to.
        subscription_data_set=[
            SubscriptionData(topic="ProgressTopic", sub_string="*"),
            SubscriptionData(topic=retry_topic("progress_cg"), sub_string="*"),
        ],
    )
    await admin.api.send_heartbeat(
        addr, HeartbeatData(client_id="admin-test", consumer_data_set=[consumer]), 3.0
    )
    await eventually_async(lambda: _has_route(admin, retry_topic("progress_cg")), WAIT_S)
    for queue_id, offset in [(0, 3), (1, 1)]:
        mq = MessageQueue("ProgressTopic", "broker-a", queue_id)
        await admin.api.update_consumer_offset(addr, "progress_cg", mq, offset, 3.0)

    progress = await admin.consumer_progress("progress_cg", "ProgressTopic")
    rows = [
        (p.queue.topic, p.queue.queue_id, p.broker_offset, p.consumer_offset, p.lag)
        for p in progress.queues
    ]
    # Sorted by topic: "%RETRY%..." sorts before letters.
    retry_rows = [r for r in rows if r[0] == "%RETRY%progress_cg"]
    assert [r for r in rows if r[0] == "ProgressTopic"] == [
        ("ProgressTopic", 0, 4, 3, 1),
        ("ProgressTopic", 1, 4, 1, 3),
    ]
    assert retry_rows and all(lag == 0 for *_, lag in retry_rows)
    assert progress.total_lag == 4
    assert [p.last_timestamp_ms for p in progress.queues if p.queue.topic == "ProgressTopic"] == [
        stored[2].store_timestamp,
        stored[4].store_timestamp,
    ]


async def _has_route(admin: AdminClient, topic: str) -> bool:
    try:
        await admin.topic_route(topic)
    except NoRouteError:
        return False
    return True


async def test_unknown_topic_or_group_gives_a_clear_error(admin: AdminClient) -> None:
    with pytest.raises(NoRouteError, match="No route info of this topic: Missing"):
        await admin.topic_status("Missing")
    with pytest.raises(NoRouteError, match="Missing"):
        await admin.consumer_progress("some_cg", "Missing")
    with pytest.raises(MQClientError, match="consumer group 'ghost_cg' not found"):
        await admin.consumer_progress("ghost_cg")
    with pytest.raises(NoRouteError, match="Missing"):
        await admin.reset_offset_by_timestamp("some_cg", "Missing", 0)


def expected_offsets(stored: list[MessageExt], timestamp_ms: int) -> dict[int, int]:
    """Per queue id: the first queue offset stored at or after the time, else the end."""
    queues = sorted({m.queue_id for m in stored})
    return {
        q: min(
            (
                m.queue_offset
                for m in stored
                if m.queue_id == q and m.store_timestamp >= timestamp_ms
            ),
            default=sum(1 for m in stored if m.queue_id == q),
        )
        for q in queues
    }


async def test_reset_offset_by_timestamp_moves_offsets_backwards_and_forwards(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    await admin.create_topic("ResetTopic", queue_nums=2)
    results = await send_to_queues(cluster, "ResetTopic", [0, 1] * 5, spaced=True)
    await dispatched(admin, "ResetTopic", results)
    stored = await stored_messages(admin, results)
    addr = cluster.brokers[0].address
    queues = [MessageQueue("ResetTopic", "broker-a", q) for q in (0, 1)]

    async def committed() -> dict[int, int]:
        return {
            mq.queue_id: await admin.api.query_consumer_offset(addr, "reset_cg", mq, 3.0)
            for mq in queues
        }

    # Backwards: everything consumed, then back to message 3 (queue 1, offset 1).
    for mq in queues:
        await admin.api.update_consumer_offset(addr, "reset_cg", mq, 5, 3.0)
    middle = stored[3].store_timestamp
    moved = await admin.reset_offset_by_timestamp("reset_cg", "ResetTopic", middle)
    assert expected_offsets(stored, middle) == {0: 2, 1: 1}
    assert {mq.queue_id: o for mq, o in moved.items()} == {0: 2, 1: 1}
    assert await committed() == {0: 2, 1: 1}

    # Forwards from the start, one millisecond after message 6: message 7 comes first.
    for mq in queues:
        await admin.api.update_consumer_offset(addr, "reset_cg", mq, 0, 3.0)
    later = stored[6].store_timestamp + 1
    assert expected_offsets(stored, later) == {0: 4, 1: 3}
    moved = await admin.reset_offset_by_timestamp("reset_cg", "ResetTopic", later)
    assert {mq.queue_id: o for mq, o in moved.items()} == {0: 4, 1: 3}
    assert await committed() == {0: 4, 1: 3}

    # Past every message: the end of each queue.
    moved = await admin.reset_offset_by_timestamp("reset_cg", "ResetTopic", 2**62)
    assert await committed() == {0: 5, 1: 5}


async def test_view_by_offset_id_and_query_by_key_and_unique_id(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    await admin.create_topic("LookupTopic", queue_nums=2)
    results = await send_to_queues(cluster, "LookupTopic", [0, 1, 0])
    await dispatched(admin, "LookupTopic", results)

    viewed = await admin.view_message(results[1].offset_msg_id)
    assert (viewed.body, viewed.keys, viewed.unique_key) == (b"m1", ["k1"], results[1].msg_id)

    by_key = await eventually_async(
        lambda: admin.query_messages_by_key("LookupTopic", "k2"), WAIT_S
    )
    assert [m.body for m in by_key] == [b"m2"]
    assert await admin.query_messages_by_key("LookupTopic", "k2", end_ms=1) == []

    by_unique_id = await admin.query_message_by_unique_id("LookupTopic", results[0].msg_id)
    assert (by_unique_id.body, by_unique_id.msg_id) == (b"m0", results[0].offset_msg_id)
    # A unique id in place of an offset id, with its topic, is found by query.
    assert (await admin.view_message(results[2].msg_id, "LookupTopic")).body == b"m2"

    with pytest.raises(MQClientError, match="no message with unique id"):
        await admin.query_message_by_unique_id("LookupTopic", "0" * 32)
    with pytest.raises(MQClientError, match="msg_id"):
        await admin.view_message("not-an-id")
    with pytest.raises(NoRouteError):
        await admin.query_messages_by_key("Missing", "k1")


async def test_reset_reaches_a_running_consumer_which_consumes_again(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    # INVOKE_BROKER_TO_RESET_OFFSET with the group online: the broker tells the consumer
    # (RESET_CONSUMER_CLIENT_OFFSET), which starts its queues again from the new offsets.
    await admin.create_topic("ReplayTopic", queue_nums=2)
    first = await send_to_queues(cluster, "ReplayTopic", [0, 1])
    await dispatched(admin, "ReplayTopic", first)
    seen: list[bytes] = []

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        seen.extend(m.body for m in messages)

    consumer = PushConsumer("replay_cg", namesrv_addr=cluster.namesrv_addr)
    consumer.subscribe("ReplayTopic")
    consumer.register_listener(on_messages)
    await consumer.start()
    try:
        await eventually_async(lambda: len(seen) >= 2, WAIT_S)
        await consumer.persist_offsets()
        moved = await admin.reset_offset_by_timestamp("replay_cg", "ReplayTopic", 0)
        assert set(moved.values()) == {0}
        await eventually_async(lambda: len(seen) >= 4, WAIT_S)
    finally:
        await consumer.shutdown()
    assert sorted(seen) == sorted([m.body for m in await stored_messages(admin, first)] * 2)


async def test_view_message_takes_the_id_send_returned(
    cluster: InProcessCluster, admin: AdminClient
) -> None:
    # send() returns the unique id (UNIQ_KEY) as msg_id. Read as an offset id it would name
    # a made-up store address; it is recognised instead, and found through its topic.
    await admin.create_topic("ViewTopic", queue_nums=1)
    msg = Message("ViewTopic", b"v")
    msg.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = PID_4242_IDS.create()
    async with Producer("view_pg", namesrv_addr=cluster.namesrv_addr) as producer:
        result = await producer.send(msg)

    with pytest.raises(MQClientError) as caught:
        await admin.view_message(result.msg_id)
    assert str(caught.value) == (
        f"msg_id {result.msg_id} is a unique id (what send() returns as msg_id), not an offset"
        " message id: looking it up needs its topic, view_message(msg_id, topic)"
    )

    async def by_unique_id() -> MessageExt | None:
        try:
            return await admin.view_message(result.msg_id, "ViewTopic")
        except MQClientError:
            return None  # the index follows the commit log in the background

    assert (await eventually_async(by_unique_id, WAIT_S)).body == b"v"
    assert (await admin.view_message(result.offset_msg_id)).unique_key == result.msg_id
