"""RocketMQ 5's cold data flow control on a real broker: a group that read its threshold of
cold data has its cold pulls held (pull consumers) or refused SYSTEM_BUSY (push consumers),
a hot group's pulls are served at once, and the admin codes 2001-2004 answer."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from orbitmq.broker import BrokerController, cold_data_pull_request_hold_service
from orbitmq.common import decode_messages
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import ConsumerData, ConsumeType, HeartbeatData, MessageModel
from orbitmq.protocol.body import SubscriptionData as BodySubscription
from orbitmq.remoting import RemotingClient
from orbitmq.store import message_reader
from tests.component.broker.conftest import (
    BrokerFactory,
    pull_request,
    send,
    send_header,
    send_request,
    sent_header,
)
from tests.eventually import eventually_async

TOPIC = "ColdCtrTopic"
COLD_GROUP = "ColdGroup"
HOT_GROUP = "HotGroup"
#: With a pretend RAM of 100 KiB, accessMessageInMemoryHotRatio 26 leaves the last 26 KiB
#: of the commit log out of the cold area: the first 70-odd of 100 1 KB messages are in it.
PRETEND_RAM_BYTES = 100 * 1024
#: A group's threshold: 8 KiB of cold reads per window, reached by one pull in the cold
#: area (accessMessageInMemoryMaxRatio 40 counts it as on disk: 8 messages a pull).
THRESHOLD = 8 * 1024
ON_DISK_PULL = 8


@pytest.fixture
def pretend_ram(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(message_reader, "TOTAL_PHYSICAL_MEMORY", PRETEND_RAM_BYTES)


async def _cold_broker(
    broker_factory: BrokerFactory, client: RemotingClient, *, enabled: bool = True
) -> BrokerController:
    broker = await broker_factory(cg_cold_read_threshold=THRESHOLD)
    broker.message_store.config.cold_data_flow_control_enable = enabled
    for i in range(100):
        body = f"m{i}:".encode().ljust(1000, b".")
        request = send_request(RequestCode.SEND_MESSAGE_V2, send_header(TOPIC), body)
        sent_header(await send(client, broker, request))
    await asyncio.wait_for(_dispatched(broker), 10)
    return broker


async def _dispatched(broker: BrokerController) -> None:
    await eventually_async(
        lambda: broker.message_store.get_max_offset_in_queue(TOPIC, 0) == 100 or None
    )


async def _pull(
    client: RemotingClient, broker: BrokerController, group: str, offset: int
) -> RemotingCommand:
    return await client.invoke(broker.address, pull_request(TOPIC, offset=offset, group=group), 20)


async def _call(
    client: RemotingClient,
    broker: BrokerController,
    code: int,
    fields: dict[str, str] | None = None,
    body: bytes = b"",
) -> RemotingCommand:
    return await send(client, broker, RemotingCommand.create_request(code, fields or {}, body))


async def _info(client: RemotingClient, broker: BrokerController) -> dict[str, object]:
    response = await _call(client, broker, RequestCode.GET_COLD_DATA_FLOW_CTR_INFO)
    assert response.code == ResponseCode.SUCCESS
    info: dict[str, object] = orjson.loads(response.body)
    return info


def _heartbeat(group: str, consume_type: ConsumeType) -> RemotingCommand:
    data = HeartbeatData(
        client_id="127.0.0.1@cold",
        consumer_data_set=[
            ConsumerData(
                group_name=group,
                consume_type=consume_type,
                message_model=MessageModel.CLUSTERING,
                subscription_data_set=[BodySubscription(topic=TOPIC, sub_string="*")],
            )
        ],
    )
    return RemotingCommand.create_request(RequestCode.HEART_BEAT, body=data.to_json())


@pytest.mark.usefixtures("pretend_ram")
async def test_a_cold_groups_pull_is_held_and_a_hot_groups_is_not(
    broker_factory: BrokerFactory, client: RemotingClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = await _cold_broker(broker_factory, client)
    first = await _pull(client, broker, COLD_GROUP, 0)
    assert first.code == ResponseCode.SUCCESS
    assert len(decode_messages(first.body)) == ON_DISK_PULL  # under the threshold: in full
    info = await _info(client, broker)
    runtime = info["runtimeTable"]
    assert isinstance(runtime, dict)
    assert runtime[COLD_GROUP]["coldAcc"] >= ON_DISK_PULL * 1000
    assert info["globalAcc"] == runtime[COLD_GROUP]["coldAcc"]
    assert (info["cgColdReadThreshold"], info["globalColdReadThreshold"]) == (
        THRESHOLD,
        100 * 1024 * 1024,
    )
    hold_service = broker.pull_message_processor.cold_data.cold_data_pull_request_hold_service
    held = asyncio.ensure_future(_pull(client, broker, COLD_GROUP, 8))
    await eventually_async(lambda: len(hold_service.held) == 1 or None, what="the pull is held")
    # Meanwhile the other group reads at the head (out of the cold area) at once, and the
    # cold group itself may read there too.
    hot = await asyncio.wait_for(_pull(client, broker, HOT_GROUP, 90), 2)
    assert [m.queue_offset for m in decode_messages(hot.body)] == list(range(90, 100))
    head = await asyncio.wait_for(_pull(client, broker, COLD_GROUP, 95), 2)
    assert len(decode_messages(head.body)) == 5
    assert not held.done()
    # Released (after 3 s on the next check; both shortened here), it reads one message.
    monkeypatch.setattr(cold_data_pull_request_hold_service, "COLD_HOLD_TIMEOUT_MILLIS", 0)
    assert hold_service.check_cold_data_pull_request() == 1
    released = await asyncio.wait_for(held, 5)
    assert released.code == ResponseCode.SUCCESS
    assert [m.queue_offset for m in decode_messages(released.body)] == [8]
    # The window ends: counts start again from 0 and the group reads in full again.
    broker.pull_message_processor.cold_data.cold_data_cg_ctr_service.clear_data_acc()
    again = await asyncio.wait_for(_pull(client, broker, COLD_GROUP, 9), 2)
    assert len(decode_messages(again.body)) == ON_DISK_PULL


@pytest.mark.usefixtures("pretend_ram")
async def test_a_push_consumers_cold_pull_is_refused_system_busy(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await _cold_broker(broker_factory, client)
    beat = await send(client, broker, _heartbeat(COLD_GROUP, ConsumeType.CONSUME_PASSIVELY))
    assert beat.code == ResponseCode.SUCCESS
    assert (await _pull(client, broker, COLD_GROUP, 0)).code == ResponseCode.SUCCESS
    refused = await asyncio.wait_for(_pull(client, broker, COLD_GROUP, 8), 2)
    assert refused.code == ResponseCode.SYSTEM_BUSY
    assert refused.remark == "This consumer group is reading cold data. It has been flow control"


@pytest.mark.usefixtures("pretend_ram")
async def test_nothing_is_held_while_the_flow_control_is_off(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await _cold_broker(broker_factory, client, enabled=False)
    for offset in (0, 8, 16):
        response = await asyncio.wait_for(_pull(client, broker, COLD_GROUP, offset), 2)
        assert len(decode_messages(response.body)) == ON_DISK_PULL
    assert (await _info(client, broker))["runtimeTable"] == {}


@pytest.mark.usefixtures("pretend_ram")
async def test_system_groups_are_neither_counted_nor_held(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await _cold_broker(broker_factory, client)
    for offset in (0, 8, 16):
        response = await asyncio.wait_for(_pull(client, broker, "TOOLS_CONSUMER", offset), 2)
        assert len(decode_messages(response.body)) == ON_DISK_PULL
    assert (await _info(client, broker))["globalAcc"] == 0


@pytest.mark.usefixtures("pretend_ram")
async def test_an_admin_threshold_lets_a_group_read_more(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    broker = await _cold_broker(broker_factory, client)
    update = await _call(
        client,
        broker,
        RequestCode.UPDATE_COLD_DATA_FLOW_CTR_CONFIG,
        body=f"{COLD_GROUP}=1000000\nOther=oops\n".encode(),
    )
    assert update.code == ResponseCode.SUCCESS
    assert (await _info(client, broker))["configTable"] == {COLD_GROUP: 1_000_000}
    for offset in (0, 8):
        response = await asyncio.wait_for(_pull(client, broker, COLD_GROUP, offset), 2)
        assert len(decode_messages(response.body)) == ON_DISK_PULL
    remove = await _call(
        client, broker, RequestCode.REMOVE_COLD_DATA_FLOW_CTR_CONFIG, body=COLD_GROUP.encode()
    )
    assert remove.code == ResponseCode.SUCCESS
    assert (await _info(client, broker))["configTable"] == {}
    hold_service = broker.pull_message_processor.cold_data.cold_data_pull_request_hold_service
    held = asyncio.ensure_future(_pull(client, broker, COLD_GROUP, 16))
    await eventually_async(lambda: len(hold_service.held) == 1 or None, what="the pull is held")
    held.cancel()


async def test_set_commit_log_read_mode(broker: BrokerController, client: RemotingClient) -> None:
    code = RequestCode.SET_COMMITLOG_READ_MODE
    files = broker.message_store.commit_log.mapped_file_queue
    response = await _call(client, broker, code, {"READ_AHEAD_MODE": "1"})
    assert (response.code, response.remark) == (
        ResponseCode.SUCCESS,
        "set commitlog readahead mode success, mode: 1",
    )
    assert not broker.message_store.config.data_read_ahead_enable
    assert files.read_mode == 1
    response = await _call(client, broker, code, {"READ_AHEAD_MODE": "0"})
    assert response.code == ResponseCode.SUCCESS
    assert broker.message_store.config.data_read_ahead_enable
    assert files.read_mode == 0
    bad = await _call(client, broker, code, {"READ_AHEAD_MODE": "3"})
    assert (bad.code, bad.remark) == (
        ResponseCode.INVALID_PARAMETER,
        "set commitlog readahead mode param value error",
    )
    missing = await _call(client, broker, code)
    assert (missing.code, missing.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "set commitlog readahead mode failed",
    )
