"""The broker's VIP channel (RocketMQ's fast remoting server on listenPort - 2): a RocketMQ
slave's metadata sync gets the same answers there as on the listen port, a pull gets what
RocketMQ answers there, and a taken VIP port fails the start with a message naming it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.broker.fast_remoting_server import MAIN_SERVER_ONLY_CODES, fast_listen_port
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import UpdateConsumerOffsetRequestHeader
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import (
    BrokerFactory,
    pull_request,
    send_header,
    send_request,
    sent_header,
)
from tests.support import free_port_pair, small_config

HOST = "127.0.0.1"
#: What a RocketMQ 4.9.8 slave's SlaveSynchronize asks its master for.
SLAVE_SYNC_CODES = (
    RequestCode.GET_ALL_TOPIC_CONFIG,
    RequestCode.GET_ALL_CONSUMER_OFFSET,
    RequestCode.GET_ALL_DELAY_OFFSET,
    RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
)


def broker_vip_channel(addr: str) -> str:
    """RocketMQ's ``MixAll.brokerVIPChannel(true, addr)``: the same host, port - 2."""
    host, port = addr.rsplit(":", 1)
    return f"{host}:{int(port) - 2}"


async def _call(client: RemotingClient, addr: str, code: int) -> RemotingCommand:
    return await client.invoke(addr, RemotingCommand.create_request(code, {}), 5.0)


async def test_a_rocketmq_slave_syncs_the_same_metadata_on_port_minus_2(
    broker_factory: BrokerFactory, client: RemotingClient
) -> None:
    port = free_port_pair(HOST)
    broker = await broker_factory(listen_port=port, bind_address=HOST)
    assert broker.fast_port == port - 2
    vip = broker_vip_channel(broker.address)
    # A producer and a consumer on the VIP channel, as RocketMQ clients with
    # vipChannelEnabled: a topic made by a send, an offset committed, a group made by it.
    header = send_header("VipTopic")
    sent = await client.invoke(vip, send_request(RequestCode.SEND_MESSAGE_V2, header, b"m"), 5.0)
    assert sent_header(sent).queue_id == 0
    update = UpdateConsumerOffsetRequestHeader(
        consumer_group="vip-group", topic="VipTopic", queue_id=0, commit_offset=1
    )
    request = RemotingCommand.create_request(
        RequestCode.UPDATE_CONSUMER_OFFSET, update.to_ext_fields()
    )
    assert (await client.invoke(vip, request, 5.0)).code == ResponseCode.SUCCESS
    for code in SLAVE_SYNC_CODES:
        on_main = await _call(client, broker.address, code)
        on_vip = await _call(client, vip, code)
        assert on_main.code == on_vip.code == ResponseCode.SUCCESS, code
        assert on_vip.body == on_main.body, code
    topics = (await _call(client, vip, RequestCode.GET_ALL_TOPIC_CONFIG)).body or b""
    offsets = (await _call(client, vip, RequestCode.GET_ALL_CONSUMER_OFFSET)).body or b""
    assert b"VipTopic" in topics
    assert b"vip-group" in offsets


async def test_a_pull_on_the_vip_channel_is_not_supported(
    broker: BrokerController, client: RemotingClient
) -> None:
    vip = f"{HOST}:{broker.fast_port}"
    sent = await client.invoke(
        vip, send_request(RequestCode.SEND_MESSAGE_V2, send_header("VipPull"), b"m"), 5.0
    )
    assert sent.code == ResponseCode.SUCCESS
    on_vip = await client.invoke(vip, pull_request("VipPull"), 5.0)
    # RocketMQ's default (admin) processor answers a code the fast server does not hold.
    assert on_vip.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert on_vip.remark == f" request type {RequestCode.PULL_MESSAGE} not supported"
    on_main = await client.invoke(broker.address, pull_request("VipPull"), 5.0)
    assert on_main.code == ResponseCode.SUCCESS


async def test_the_vip_channel_serves_every_code_but_pulls_with_the_same_processors(
    broker: BrokerController,
) -> None:
    assert broker.fast_port not in (0, broker.port)  # port 0: any free port
    main = broker.remoting_server.table.registrations
    fast = broker.fast_remoting_server.table.registrations
    assert set(main) - set(fast) == MAIN_SERVER_ONLY_CODES == {RequestCode.PULL_MESSAGE}
    for code, registration in fast.items():
        assert registration == main[code], code


def test_the_vip_port_is_listen_port_minus_2() -> None:
    assert fast_listen_port(10911) == 10909
    assert fast_listen_port(0) == 0
    assert fast_listen_port(1) == 0


async def test_a_taken_vip_port_fails_the_start_naming_it(tmp_path: Path) -> None:
    port = free_port_pair(HOST)
    config = BrokerConfig(
        broker_name="broker-a", broker_ip1=HOST, bind_address=HOST, listen_port=port
    )
    with socket.socket() as squatter:
        squatter.bind((HOST, port - 2))
        squatter.listen()
        broker = BrokerController(config, small_config(tmp_path / "store"))
        with pytest.raises(OSError, match=rf"VIP channel port \(listenPort {port} - 2") as caught:
            await broker.start()
        assert f"{HOST}:{port - 2}" in str(caught.value)
        # Neither port is held and the store was not touched: a later start succeeds.
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((HOST, port))
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.json"))
    again = BrokerController(config, small_config(tmp_path / "store"))
    await again.start()
    try:
        assert again.fast_port == port - 2
    finally:
        await again.stop()
