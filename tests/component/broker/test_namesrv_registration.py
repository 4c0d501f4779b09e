"""A BrokerController registers with every configured name server (NamesrvController on
port 0 in the same loop): at start, again when a send creates a topic, and it unregisters
at stop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from orbitmq.broker import BrokerConfig, BrokerController
from orbitmq.common import decode_message_id
from orbitmq.namesrv import NamesrvConfig, NamesrvController
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode, TopicRouteData
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import send_header, send_request, sent_header
from tests.support import LogRecordWaiter, small_config


@pytest.fixture
async def namesrvs() -> AsyncIterator[list[NamesrvController]]:
    controllers = [NamesrvController(NamesrvConfig(listen_port=0, kv_config_path=""))]
    controllers.append(NamesrvController(NamesrvConfig(listen_port=0, kv_config_path="")))
    for controller in controllers:
        await controller.start()
    yield controllers
    for controller in controllers:
        await controller.stop()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    remoting_client = RemotingClient(connect_timeout_s=2.0)
    yield remoting_client
    await remoting_client.close()


def make_broker(tmp_path: Path, namesrvs: list[NamesrvController]) -> BrokerController:
    config = BrokerConfig(
        broker_name="broker-a",
        broker_ip1="127.0.0.1",
        listen_port=0,
        namesrv_addr=";".join(n.address for n in namesrvs),
    )
    return BrokerController(config, small_config(tmp_path / "store"))


async def route(client: RemotingClient, namesrv: NamesrvController, topic: str) -> RemotingCommand:
    request = RemotingCommand.create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return await client.invoke(namesrv.address, request, 5.0)


def broker_addrs(response: RemotingCommand) -> list[dict[int, str]]:
    assert response.code == ResponseCode.SUCCESS, response.remark
    return [b.broker_addrs for b in TopicRouteData.from_json(response.body).broker_datas]


async def test_registered_with_every_name_server_at_start_and_on_new_topic(
    tmp_path: Path, namesrvs: list[NamesrvController], client: RemotingClient
) -> None:
    broker = make_broker(tmp_path, namesrvs)
    await broker.start()
    try:
        # Registered once start returns: TBW102 routes to this broker on both name servers.
        for namesrv in namesrvs:
            assert broker_addrs(await route(client, namesrv, "TBW102")) == [{0: broker.address}]
        assert broker.registration_service.rounds == 1
        assert len(broker.registration_service.last_results) == 2

        # A send that creates a topic registers again at once (not after 30 s).
        rounds = broker.registration_service.rounds
        header = sent_header(
            await client.invoke(
                broker.address,
                send_request(RequestCode.SEND_MESSAGE_V2, send_header("NewTopic"), b"x"),
                5.0,
            )
        )
        # The offset msgId carries the bound port, not the configured 0.
        assert decode_message_id(header.msg_id)[0] == ("127.0.0.1", broker.port)
        async with asyncio.timeout(5):
            await broker.registration_service.wait_rounds(rounds + 1)
        for namesrv in namesrvs:
            response = await route(client, namesrv, "NewTopic")
            assert broker_addrs(response) == [{0: broker.address}]
            queues = TopicRouteData.from_json(response.body).queue_datas
            assert [(q.broker_name, q.write_queue_nums) for q in queues] == [("broker-a", 4)]
    finally:
        await broker.stop()
    # Stopping unregisters: the name servers no longer route to it.
    for namesrv in namesrvs:
        assert namesrv.route_info_manager.live_broker_addrs() == []
        assert (await route(client, namesrv, "TBW102")).code == ResponseCode.TOPIC_NOT_EXIST


async def test_periodic_registration_and_an_unreachable_name_server_is_not_fatal(
    tmp_path: Path, namesrvs: list[NamesrvController], client: RemotingClient
) -> None:
    broker = make_broker(tmp_path, namesrvs[:1])
    # A name server that is down is only logged.
    broker.registration_service.namesrv_addresses.append("127.0.0.1:1")
    broker.registration_service.period_s = 0.05
    await broker.start()
    try:
        assert len(broker.registration_service.last_results) == 1
        async with asyncio.timeout(5):
            await broker.registration_service.wait_rounds(3)
        assert broker_addrs(await route(client, namesrvs[0], "TBW102")) == [{0: broker.address}]
    finally:
        await broker.stop()


async def test_a_namesrv_addr_pointing_at_a_broker_is_named_in_the_log(tmp_path: Path) -> None:
    # broker-b's namesrvAddr is broker-a's address: its registration is refused, and the
    # log line says what is wrong and what to put there; broker-a warns once, not per request.
    target = BrokerController(
        BrokerConfig(broker_name="broker-a", broker_ip1="127.0.0.1", listen_port=0),
        small_config(tmp_path / "a"),
    )
    await target.start()
    misled = BrokerController(
        BrokerConfig(
            broker_name="broker-b",
            broker_ip1="127.0.0.1",
            listen_port=0,
            namesrv_addr=target.address,
        ),
        small_config(tmp_path / "b"),
    )
    try:
        with (
            LogRecordWaiter("orbitmq.broker.broker_outer_api") as outer,
            LogRecordWaiter("orbitmq.remoting.processor_table") as table,
        ):
            await misled.start()  # the first registration round is awaited
            await misled.registration_service.register_now()

            addr = target.address
            assert (
                outer.at_least(logging.WARNING)
                == [
                    f"registerBroker to name server {addr} refused: {addr} is a broker, not a name"
                    " server (REGISTER_BROKER not supported); use the name server address, e.g."
                    " 127.0.0.1:9876 (the broker's namesrvAddr)"
                ]
                * 2
            )
            assert len(table.at_least(logging.WARNING)) == 1
    finally:
        await misled.stop()
        await target.stop()
