"""Clients pointed at a wrong or dead address say so within their first request timeout: which
address, what is wrong with it, and what to use instead. And a consumer's shutdown is quiet."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Iterator, Sequence

import pytest

from orbitmq.client import (
    AdminClient,
    ClientConfig,
    ConsumeContext,
    LitePullConsumer,
    MQClientError,
    MQClientInstance,
    Producer,
    ProducerConfig,
    PushConsumer,
    SendTimeoutError,
    WrongServerError,
)
from orbitmq.common import Message, MessageExt, MessageQueue
from orbitmq.protocol import BROKER_REQUEST_CODES, NAMESRV_REQUEST_CODES, CreateTopicRequestHeader
from orbitmq.sync import Producer as SyncProducer
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async
from tests.support import LogRecordWaiter

pytestmark = pytest.mark.timeout(60)

#: A short request timeout, so that "within its first request timeout" is quick to check.
SHORT_S = 0.5
#: What the machine may add to it (two shared cores, other tests running).
SLACK_S = 2.0
CHECK_NAMESRV = "check namesrv_addr and that the name server is running"


@pytest.fixture
def refusing_addr() -> Iterator[str]:
    """A port bound but not listening: connecting is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture
def unresponsive_addr() -> Iterator[str]:
    """A listener whose accept queue is full: the kernel drops further connection attempts,
    so a connect hangs as it does to a host that is down or behind a dropping firewall."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        fillers = []
        for _ in range(3):
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(listener.getsockname())
            fillers.append(filler)
        try:
            yield f"127.0.0.1:{listener.getsockname()[1]}"
        finally:
            for filler in fillers:
                filler.close()


def short_client(addr: str) -> ClientConfig:
    return ClientConfig(namesrv_addr=addr, mq_client_api_timeout_s=SHORT_S)


async def nothing(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
    return None


# -- a dead name server -------------------------------------------------------------------


async def test_a_send_to_a_refusing_name_server_fails_at_once_naming_it(
    refusing_addr: str,
) -> None:
    async with Producer("pg", namesrv_addr=refusing_addr) as producer:
        began = time.monotonic()
        with pytest.raises(MQClientError) as caught:
            await producer.send(Message("T", b"x"))
    assert time.monotonic() - began < SLACK_S
    assert str(caught.value) == (
        f"no route of topic T from name server {refusing_addr}: connect to {refusing_addr}"
        f" failed: connection refused; {CHECK_NAMESRV}"
    )


async def test_a_send_to_an_unresponsive_name_server_fails_within_the_send_timeout(
    unresponsive_addr: str,
) -> None:
    # Not a bare TimeoutError: what the send was waiting for, and where.
    config = ProducerConfig(send_msg_timeout_s=SHORT_S)
    async with Producer("pg", namesrv_addr=unresponsive_addr, config=config) as producer:
        began = time.monotonic()
        with pytest.raises(SendTimeoutError) as caught:
            await producer.send(Message("T", b"x"))
    assert time.monotonic() - began < SHORT_S + SLACK_S
    assert isinstance(caught.value, TimeoutError)
    assert str(caught.value) == (
        "send to topic T timed out after 500 ms (send_msg_timeout_s) waiting for the route of"
        f" topic T from name server {unresponsive_addr}; {CHECK_NAMESRV}"
    )


@pytest.mark.parametrize("kind", ["push", "lite pull"])
@pytest.mark.parametrize(
    ("dead", "cause"),
    [("refusing_addr", "connection refused"), ("unresponsive_addr", "timed out after 500 ms")],
)
async def test_a_consumer_start_fails_within_its_first_request_timeout(
    request: pytest.FixtureRequest, kind: str, dead: str, cause: str
) -> None:
    # RocketMQ's consumer start throws when the name server cannot be reached; it used to
    # "start" here and then consume nothing, without a word above DEBUG.
    addr: str = request.getfixturevalue(dead)
    consumer: PushConsumer | LitePullConsumer
    if kind == "push":
        consumer = PushConsumer("cg", client_config=short_client(addr))
        consumer.register_listener(nothing)
    else:
        consumer = LitePullConsumer("cg", client_config=short_client(addr))
    consumer.subscribe("T")
    began = time.monotonic()
    with pytest.raises(MQClientError) as caught:
        await consumer.start()
    assert time.monotonic() - began < SHORT_S + SLACK_S
    assert str(caught.value) == (
        f"no route of topic T from name server {addr}: connect to {addr} failed: {cause};"
        f" {CHECK_NAMESRV}"
    )
    # Nothing left running: the failed start undid its registration and connections.
    assert "cg" not in consumer.instance.consumers
    assert consumer.instance.remoting.addresses == []


async def test_an_admin_client_names_the_dead_name_server(refusing_addr: str) -> None:
    async with AdminClient(namesrv_addr=refusing_addr) as admin:
        with pytest.raises(MQClientError) as caught:
            await admin.list_topics()
    assert str(caught.value) == (
        f"no name server answered: {refusing_addr}: connect to {refusing_addr} failed:"
        f" connection refused; {CHECK_NAMESRV}"
    )


def test_the_blocking_producer_names_the_dead_name_server(refusing_addr: str) -> None:
    with (
        SyncProducer("pg", namesrv_addr=refusing_addr) as producer,
        pytest.raises(MQClientError, match=f"connect to {refusing_addr} failed: connection"),
    ):
        producer.send(Message("T", b"x"))


# -- the other kind of server -------------------------------------------------------------


async def test_clients_pointed_at_a_broker_are_told_to_use_the_name_server(
    cluster: InProcessCluster,
) -> None:
    broker = cluster.brokers[0].address

    def told(code: str) -> str:
        return (
            f"{broker} is a broker, not a name server ({code} not supported); use the name"
            " server address, e.g. 127.0.0.1:9876"
        )

    async with Producer("pg", namesrv_addr=broker) as producer:
        with pytest.raises(WrongServerError) as caught:
            await producer.send(Message("T", b"x"))
        assert str(caught.value) == told("GET_ROUTEINFO_BY_TOPIC")

    consumer = PushConsumer("cg", namesrv_addr=broker)
    consumer.subscribe("T")
    consumer.register_listener(nothing)
    with pytest.raises(WrongServerError) as caught:
        await consumer.start()
    assert str(caught.value) == told("GET_ROUTEINFO_BY_TOPIC")

    async with AdminClient(namesrv_addr=broker) as admin:
        with pytest.raises(WrongServerError) as caught:
            await admin.list_topics()
        assert str(caught.value) == told("GET_ALL_TOPIC_LIST_FROM_NAMESERVER")
        with pytest.raises(WrongServerError) as caught:
            await admin.create_topic("T")
        assert str(caught.value) == told("GET_BROKER_CLUSTER_INFO")
    assert not caught.value.retriable and not caught.value.refresh_route


async def test_a_broker_request_sent_to_a_name_server_says_so(cluster: InProcessCluster) -> None:
    namesrv = cluster.namesrv_addr
    host = namesrv.rpartition(":")[0]
    header = CreateTopicRequestHeader(
        topic="T",
        default_topic="TBW102",
        read_queue_nums=1,
        write_queue_nums=1,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    async with AdminClient(namesrv_addr=namesrv) as admin:
        with pytest.raises(WrongServerError) as caught:
            await admin.api.create_topic(namesrv, header, 3.0)
        assert str(caught.value) == (
            f"{namesrv} is a name server, not a broker (UPDATE_AND_CREATE_TOPIC not supported);"
            f" use a broker address, e.g. {host}:10911"
        )
        with pytest.raises(WrongServerError, match=r"\(GET_MAX_OFFSET not supported\)"):
            await admin.api.get_max_offset(namesrv, MessageQueue("T", "broker-a", 0), 3.0)


async def test_the_code_tables_fit_both_servers(cluster: InProcessCluster) -> None:
    # A code in a table must be one that kind of OrbitMQ server serves and the other does
    # not, or a NOT_SUPPORTED from our own server would be taken for a mix-up.
    namesrv_codes = {int(code) for code, *_ in cluster.namesrv.registrations}
    broker_codes = {int(code) for code, *_ in cluster.brokers[0].registrations}
    assert namesrv_codes >= NAMESRV_REQUEST_CODES
    assert broker_codes >= BROKER_REQUEST_CODES
    assert not NAMESRV_REQUEST_CODES & broker_codes
    assert not BROKER_REQUEST_CODES & namesrv_codes


# -- shutting down --------------------------------------------------------------------------


async def test_a_consumer_shutdown_leaves_no_unmatched_response_warning(
    cluster: InProcessCluster,
) -> None:
    # The broker holds the consumer's long polls; shutting down cancels them. With the client
    # instance shared, the connection outlives the consumer, and a message arriving later
    # makes the broker answer a held poll nobody waits for: expected, so not a warning.
    async with AdminClient(namesrv_addr=cluster.namesrv_addr) as admin:
        await admin.create_topic("QuietTopic", queue_nums=1)
    instance = MQClientInstance(ClientConfig(namesrv_addr=cluster.namesrv_addr))
    producer = Producer("quiet_pg", instance=instance)
    await producer.start()
    consumed = asyncio.Event()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        consumed.set()

    consumer = PushConsumer("quiet_cg", instance=instance)
    consumer.subscribe("QuietTopic")
    consumer.register_listener(on_messages)
    await consumer.start()
    try:
        await producer.send(Message("QuietTopic", b"first"))
        await asyncio.wait_for(consumed.wait(), 20)
        holds = cluster.brokers[0].pull_request_hold_service
        # QuietTopic's queue and the retry topic's.
        await eventually_async(lambda: holds.held_count >= 2, 20, 0.01)

        with LogRecordWaiter("orbitmq.remoting.channel") as log:
            await consumer.shutdown()
            await producer.send(Message("QuietTopic", b"after"))  # wakes the held poll
            await log.wait_for(lambda r: "given up before" in r.getMessage(), 20)
            assert log.at_least(logging.WARNING) == []
    finally:
        await consumer.shutdown()
        await producer.shutdown()
        await instance.shutdown()
