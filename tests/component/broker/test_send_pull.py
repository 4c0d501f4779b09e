"""SEND (10, 310, 320) and PULL (11) against a real BrokerController over sockets."""

from __future__ import annotations

import asyncio

import pytest

from orbitmq.broker import BrokerController, PullRequest
from orbitmq.common import Message, MessageQueue, decode_message_id, decode_messages
from orbitmq.common.topic import RMQ_SYS_OFFSET_MOVED_EVENT
from orbitmq.protocol import OffsetMovedEvent, RequestCode, ResponseCode
from orbitmq.protocol.pull_sys_flag import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import (
    BrokerFactory,
    batch_body,
    pull_all,
    pull_request,
    send,
    send_header,
    send_request,
    sent_header,
)
from tests.eventually import eventually_async, stays_async


async def test_send_v1_v2_and_batch_then_pull_them_back(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicSendPull"
    v1 = send_request(
        RequestCode.SEND_MESSAGE,
        send_header(topic, {"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "u1", "WAIT": "true"}),
        b"body-v1",
    )
    v2 = send_request(
        RequestCode.SEND_MESSAGE_V2, send_header(topic, {"TAGS": "TagB", "color": "red"}), b"v2"
    )
    batch = [Message(topic, f"batch-{i}".encode(), properties={"TAGS": "TagC"}) for i in range(3)]
    batch_req = send_request(
        RequestCode.SEND_BATCH_MESSAGE, send_header(topic, batch=True), batch_body(batch)
    )

    r1 = await send(client, broker, v1)
    r2 = await send(client, broker, v2)
    r3 = await send(client, broker, batch_req)
    h1, h2, h3 = sent_header(r1), sent_header(r2), sent_header(r3)
    for response in (r1, r2, r3):
        assert response.ext_fields["MSG_REGION"] == "DefaultRegion"
        assert response.ext_fields["TRACE_ON"] == "true"
    assert (h1.queue_id, h1.queue_offset) == (0, 0)
    assert (h2.queue_id, h2.queue_offset) == (0, 1)
    assert (h3.queue_id, h3.queue_offset) == (0, 2)
    assert len(h3.msg_id.split(",")) == 3

    messages = await pull_all(client, broker, topic, 5)
    assert [m.body for m in messages] == [b"body-v1", b"v2", b"batch-0", b"batch-1", b"batch-2"]
    assert [m.queue_offset for m in messages] == [0, 1, 2, 3, 4]
    assert [m.tags for m in messages] == ["TagA", "TagB", "TagC", "TagC", "TagC"]
    first = messages[0]
    assert first.properties["KEYS"] == "k1"
    assert first.properties["UNIQ_KEY"] == "u1"
    assert first.properties["CLUSTER"] == "DefaultCluster"
    assert "WAIT" not in first.properties  # RocketMQ drops WAIT=true from the stored string
    assert messages[1].properties["color"] == "red"
    assert first.born_timestamp == 1_700_000_000_000
    assert first.born_host[0] == "127.0.0.1"

    # Offset message ids decode to the store address and the commit log offsets.
    ids = [h1.msg_id, h2.msg_id, *h3.msg_id.split(",")]
    for msg_id, message in zip(ids, messages, strict=True):
        host, offset = decode_message_id(msg_id)
        assert offset == message.commit_log_offset
        assert host[0] == "127.0.0.1"


async def test_negative_queue_id_picks_a_write_queue(
    broker: BrokerController, client: RemotingClient
) -> None:
    for _ in range(8):
        header = sent_header(
            await send(
                client,
                broker,
                send_request(
                    RequestCode.SEND_MESSAGE_V2, send_header("TopicAny", queue_id=-1), b"x"
                ),
            )
        )
        assert 0 <= header.queue_id < 4


async def test_queue_id_beyond_the_topic_is_a_system_error(
    broker: BrokerController, client: RemotingClient
) -> None:
    request = send_request(RequestCode.SEND_MESSAGE, send_header("TopicQ", queue_id=9), b"x")
    response = await send(client, broker, request)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None
    assert response.remark.startswith("request queueId[9] is illegal")


@pytest.mark.parametrize(
    ("topic", "remark"),
    [
        (" ", "The specified topic is blank."),
        (
            "bad topic",
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
        ),
        ("t" * 128, "The specified topic is longer than topic max length."),
    ],
)
async def test_send_refuses_bad_topic_names_with_topic_validators_remarks(
    broker: BrokerController, client: RemotingClient, topic: str, remark: str
) -> None:
    request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic), b"x")
    response = await send(client, broker, request)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark == remark


async def test_unknown_topic_without_auto_create_is_topic_not_exist(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await broker_factory(auto_create_topic_enable=False)
    request = send_request(RequestCode.SEND_MESSAGE_V2, send_header("NoSuchTopic"), b"x")
    response = await send(client, broker, request)
    assert response.code == ResponseCode.TOPIC_NOT_EXIST.value == 17
    assert response.remark is not None
    assert response.remark.startswith("topic[NoSuchTopic] not exist, apply first please!")
    pull = await send(client, broker, pull_request("NoSuchTopic"))
    assert pull.code == ResponseCode.TOPIC_NOT_EXIST


@pytest.mark.parametrize(
    "topic",
    [
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    ],
)
@pytest.mark.parametrize("code", [RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2])
async def test_sending_to_a_broker_written_system_topic_is_forbidden(
    broker: BrokerController, client: RemotingClient, topic: str, code: RequestCode
) -> None:
    # RocketMQ 4.9.8's msgCheck: TopicValidator.isNotAllowedSendTopic, NO_PERMISSION (16).
    response = await send(client, broker, send_request(code, send_header(topic), b"x"))
    assert response.code == ResponseCode.NO_PERMISSION.value == 16
    assert response.remark == f"Sending message to topic[{topic}] is forbidden."


@pytest.mark.parametrize("topic", ["TBW102", "BenchmarkTest", "RMQ_SYS_TRACE_TOPIC"])
async def test_the_other_system_topics_take_sends_as_in_rocketmq(
    broker: BrokerController, client: RemotingClient, topic: str
) -> None:
    # Message traces go to RMQ_SYS_TRACE_TOPIC and RocketMQ's benchmark to BenchmarkTest.
    request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic), b"x")
    assert sent_header(await send(client, broker, request)).queue_offset == 0


async def test_pull_with_a_tag_filter(broker: BrokerController, client: RemotingClient) -> None:
    topic = "TopicTags"
    for i, tag in enumerate(["TagA", "TagB", "TagC", "TagA", ""]):
        props = {"TAGS": tag} if tag else {}
        request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic, props), b"%d" % i)
        sent_header(await send(client, broker, request))
    await pull_all(client, broker, topic, 5)  # every message is dispatched

    response = await send(client, broker, pull_request(topic, subscription="TagA || TagC"))
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(response.body)] == [b"0", b"2", b"3"]
    assert response.ext_fields["nextBeginOffset"] == "5"

    none = await send(client, broker, pull_request(topic, subscription="TagZ"))
    assert none.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    assert none.remark == "NO_MATCHED_MESSAGE"
    assert none.ext_fields["nextBeginOffset"] == "5"


async def test_pull_offsets_outside_the_queue(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicBounds"
    empty = await send(client, broker, pull_request(topic))
    assert empty.code == ResponseCode.TOPIC_NOT_EXIST  # not created yet
    for i in range(2):
        request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic), b"%d" % i)
        sent_header(await send(client, broker, request))
    await pull_all(client, broker, topic, 2)

    at_max = await send(client, broker, pull_request(topic, offset=2))
    assert at_max.code == ResponseCode.PULL_NOT_FOUND
    assert at_max.remark == "OFFSET_OVERFLOW_ONE"
    past = await send(client, broker, pull_request(topic, offset=7))
    assert past.code == ResponseCode.PULL_OFFSET_MOVED
    assert past.remark == "OFFSET_OVERFLOW_BADLY"
    # RocketMQ corrects to the min offset when the queue still starts at 0.
    assert past.ext_fields["nextBeginOffset"] == "0"
    assert past.ext_fields["maxOffset"] == "2"
    assert past.ext_fields["minOffset"] == "0"
    assert past.ext_fields["suggestWhichBrokerId"] == "0"

    # Queue 1 of the same topic exists but is empty: offset 0 waits, others moved.
    empty0 = await send(client, broker, pull_request(topic, queue_id=1, offset=0))
    assert empty0.code == ResponseCode.PULL_NOT_FOUND
    empty5 = await send(client, broker, pull_request(topic, queue_id=1, offset=5))
    assert empty5.code == ResponseCode.PULL_OFFSET_MOVED
    bad_queue = await send(client, broker, pull_request(topic, queue_id=99))
    assert bad_queue.code == ResponseCode.SYSTEM_ERROR

    # Each correction is recorded in OFFSET_MOVED_EVENT, tagged and keyed by the group.
    events = await pull_all(client, broker, RMQ_SYS_OFFSET_MOVED_EVENT, 2)
    assert [m.tags for m in events] == ["cg", "cg"]
    assert [m.keys for m in events] == [["cg"], ["cg"]]
    moved = [OffsetMovedEvent.from_json(m.body) for m in events]
    assert [(e.message_queue, e.offset_request, e.offset_new) for e in moved] == [
        (MessageQueue(topic, broker.broker_config.broker_name, 0), 7, 0),
        (MessageQueue(topic, broker.broker_config.broker_name, 1), 5, 0),
    ]
    assert {e.consumer_group for e in moved} == {"cg"}


async def test_pull_without_subscription_and_no_registry(
    broker: BrokerController, client: RemotingClient
) -> None:
    sent_header(
        await send(
            client, broker, send_request(RequestCode.SEND_MESSAGE, send_header("TopicNS"), b"x")
        )
    )
    response = await send(client, broker, pull_request("TopicNS", sys_flag=0))
    assert response.code == ResponseCode.SUBSCRIPTION_NOT_EXIST


async def test_commit_offset_carried_in_the_pull(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicCommit"
    sent_header(
        await send(client, broker, send_request(RequestCode.SEND_MESSAGE, send_header(topic), b"x"))
    )
    request = pull_request(
        topic, group="cg-commit", sys_flag=FLAG_SUBSCRIPTION | FLAG_COMMIT_OFFSET, commit_offset=42
    )
    await send(client, broker, request)
    assert broker.consumer_offset_manager.query_offset("cg-commit", topic, 0) == 42
    # Without the flag nothing is committed.
    request = pull_request(topic, group="cg-commit", sys_flag=FLAG_SUBSCRIPTION, commit_offset=7)
    await send(client, broker, request)
    assert broker.consumer_offset_manager.query_offset("cg-commit", topic, 0) == 42


async def test_long_polling_answers_when_a_message_arrives(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicLongPoll"
    # Create the topic (queue 1 stays empty).
    sent_header(
        await send(client, broker, send_request(RequestCode.SEND_MESSAGE, send_header(topic), b"a"))
    )
    hold = broker.pull_request_hold_service
    held = asyncio.Event()
    original = hold.suspend_pull_request

    def suspend(topic: str, queue_id: int, request: PullRequest) -> None:
        original(topic, queue_id, request)
        held.set()

    hold.suspend_pull_request = suspend  # type: ignore[method-assign]
    loop = asyncio.get_running_loop()
    request = pull_request(
        topic, queue_id=1, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, suspend_timeout_ms=15_000
    )
    pending = asyncio.create_task(client.invoke(broker.address, request, 30.0))
    await asyncio.wait_for(held.wait(), 5)
    assert hold.held_count == 1
    assert not pending.done()

    started = loop.time()
    send_to_1 = send_request(RequestCode.SEND_MESSAGE_V2, send_header(topic, queue_id=1), b"late")
    sent_header(await send(client, broker, send_to_1))
    response = await asyncio.wait_for(pending, 10)
    elapsed = loop.time() - started
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(response.body)] == [b"late"]
    assert elapsed < 3.0  # well before the 15 s suspend timeout and the 5 s re-check
    assert hold.held_count == 0


async def test_long_polling_waits_through_messages_its_tags_do_not_want(
    broker: BrokerController, client: RemotingClient
) -> None:
    # As RocketMQ's notifyMessageArriving: an arrival wakes a held pull only if its tag code
    # passes the pull's filter; the pull then answers with just the wanted message.
    topic = "TopicLongPollTags"
    create = send_request(RequestCode.SEND_MESSAGE, send_header(topic), b"a")
    sent_header(await send(client, broker, create))
    hold = broker.pull_request_hold_service
    woken: list[PullRequest] = []
    original = hold._wakeup

    def wakeup(request: PullRequest) -> None:
        woken.append(request)
        original(request)

    hold._wakeup = wakeup
    request = pull_request(
        topic,
        queue_id=1,
        sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
        suspend_timeout_ms=15_000,
        subscription="TagA",
    )
    pending = asyncio.create_task(client.invoke(broker.address, request, 30.0))
    await eventually_async(lambda: hold.held_count, 2, what="the pull to be held")
    assert hold.held_count == 1

    for tag in ("TagB", "TagC"):
        other = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header(topic, {"TAGS": tag}, queue_id=1), b"no"
        )
        sent_header(await send(client, broker, other))
    assert await asyncio.to_thread(broker.message_store.wait_for_dispatch, 5)
    # The arrivals hop from the reput thread to the loop: give them the time to (not) wake it.
    await stays_async(
        lambda: not pending.done() and not woken, 0.3, what="the pull held through other tags"
    )
    assert not pending.done()
    assert woken == []

    wanted = send_request(
        RequestCode.SEND_MESSAGE_V2, send_header(topic, {"TAGS": "TagA"}, queue_id=1), b"yes"
    )
    sent_header(await send(client, broker, wanted))
    response = await asyncio.wait_for(pending, 3)
    assert response.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages(response.body)] == [b"yes"]
    assert len(woken) == 1


async def test_long_polling_times_out_with_pull_not_found(
    broker: BrokerController, client: RemotingClient
) -> None:
    topic = "TopicPollTimeout"
    sent_header(
        await send(client, broker, send_request(RequestCode.SEND_MESSAGE, send_header(topic), b"a"))
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    request = pull_request(
        topic, queue_id=2, sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND, suspend_timeout_ms=300
    )
    response = await client.invoke(broker.address, request, 10.0)
    elapsed = loop.time() - started
    assert response.code == ResponseCode.PULL_NOT_FOUND
    assert 0.25 <= elapsed < 3.0


async def test_the_batch_flag_not_the_code_makes_a_batch(
    broker: BrokerController, client: RemotingClient
) -> None:
    # As RocketMQ's SendMessageProcessor: SEND_MESSAGE_V2 with ``m`` set is split into its
    # messages; SEND_BATCH_MESSAGE without it is one message whose body is the encoded batch.
    topic = "TopicBatchFlag"
    batch = [Message(topic, f"b-{i}".encode()) for i in range(2)]
    flagged_v2 = send_request(
        RequestCode.SEND_MESSAGE_V2, send_header(topic, batch=True), batch_body(batch)
    )
    unflagged_320 = send_request(
        RequestCode.SEND_BATCH_MESSAGE, send_header(topic), batch_body(batch)
    )

    h1 = sent_header(await send(client, broker, flagged_v2))
    h2 = sent_header(await send(client, broker, unflagged_320))

    assert len(h1.msg_id.split(",")) == 2
    assert "," not in h2.msg_id
    messages = await pull_all(client, broker, topic, 3)
    assert [m.body for m in messages] == [b"b-0", b"b-1", batch_body(batch)]
