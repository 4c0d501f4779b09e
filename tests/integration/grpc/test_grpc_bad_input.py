"""Bad input to the gRPC endpoint over a real socket (issue 19 §4): bytes that are not the
RPC's protobuf message, RPCs and services that do not exist, a request over the inbound
limit, a Telemetry stream that never reads and one that sends garbage. Each gets a clear
status; the broker stays up, serves other clients meanwhile and loses nothing it answered."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import grpc.aio
import pytest

from orbitmq.broker import BrokerController
from orbitmq.client import Producer
from orbitmq.common import Message, MessageQueue, decode_message_id
from orbitmq.proxy import GrpcEndpoint, GrpcServer, MessagingServiceStub
from orbitmq.proxy.grpc_client_channel import MAX_PENDING_BYTES, MAX_PENDING_COMMANDS
from orbitmq.proxy.grpc_messaging_application import GrpcMessagingApplication
from orbitmq.proxy.transaction_id import encode_transaction_id
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async
from tests.integration.grpc.conftest import CLIENT_METADATA, GrpcCluster, create_topic

pytestmark = pytest.mark.timeout(60)

SERVICE = "/apache.rocketmq.v2.MessagingService"
GARBAGE = b"\xff\xff\xff\xff\x0f"


async def raw_unary(channel: grpc.aio.Channel, path: str, payload: bytes) -> grpc.aio.AioRpcError:
    call = channel.unary_unary(path, None, None)  # raw bytes both ways
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call(payload, timeout=10)
    return caught.value


async def still_serves(stub: MessagingServiceStub, broker: BrokerController) -> None:
    """The endpoint still answers real requests: a send to a topic, answered OK."""
    if broker.topic_config_manager.select_topic_config("Alive") is None:
        await create_topic(broker, "Alive")
    message = d.Message(
        topic=d.Resource(name="Alive"),
        body=b"alive",
        system_properties=d.SystemProperties(message_id="alive-1", message_type=d.NORMAL),
    )
    request = pb.SendMessageRequest(messages=[message])
    response = await stub.SendMessage(request, metadata=CLIENT_METADATA, timeout=10)
    assert response.status.code == d.OK, response.status


async def test_malformed_protobuf_is_invalid_argument(grpc_cluster: GrpcCluster) -> None:
    channel = grpc_cluster.channel
    for rpc, type_name in (
        ("EndTransaction", "EndTransactionRequest"),
        ("Heartbeat", "HeartbeatRequest"),
    ):
        error = await raw_unary(channel, f"{SERVICE}/{rpc}", GARBAGE)
        assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert (error.details() or "").startswith(f"malformed apache.rocketmq.v2.{type_name}: ")
    raw_stream = channel.stream_stream(f"{SERVICE}/Telemetry", None, None)
    telemetry = raw_stream(metadata=(("x-mq-client-id", "garbage"),))  # type: ignore[call-arg]
    await telemetry.write(GARBAGE)
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await telemetry.read()
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "malformed apache.rocketmq.v2.TelemetryCommand" in (caught.value.details() or "")
    await still_serves(grpc_cluster.stub, grpc_cluster.broker)


async def test_unknown_rpcs_and_services_are_unimplemented(grpc_cluster: GrpcCluster) -> None:
    for path in (f"{SERVICE}/NoSuchRpc", "/apache.rocketmq.v1.MessagingService/Heartbeat"):
        error = await raw_unary(grpc_cluster.channel, path, b"")
        assert error.code() == grpc.StatusCode.UNIMPLEMENTED
    await still_serves(grpc_cluster.stub, grpc_cluster.broker)


async def test_a_request_over_the_inbound_limit_names_it(tmp_path: Path) -> None:
    limit = 1024 * 1024
    async with InProcessCluster(tmp_path / "c") as cluster:
        application = GrpcMessagingApplication(cluster.brokers[0])
        server = GrpcServer(
            "127.0.0.1", 0, application.behaviours(), max_inbound_message_bytes=limit
        )
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                stub = MessagingServiceStub(channel)
                # 1.2 MB in one request (any RPC: the limit is the transport's).
                huge = pb.EndTransactionRequest(
                    topic=d.Resource(name="T"), trace_context="x" * 1_200_000
                )
                with pytest.raises(grpc.aio.AioRpcError) as caught:
                    await stub.EndTransaction(huge, timeout=10)
                assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert str(limit) in (caught.value.details() or "")
                await still_serves(stub, cluster.brokers[0])
        finally:
            await server.stop()


async def test_huge_messages_and_batches_are_refused_naming_the_limit(
    tmp_path: Path,
) -> None:
    """Over maxMessageSize (4 MiB here): one body is MESSAGE_BODY_TOO_LARGE before anything
    is stored (RocketMQ 5's proxy check); a batch whose bodies fit one by one but not
    together is refused by the store as a remoting batch is (INTERNAL_SERVER_ERROR with the
    store's words, as RocketMQ's proxy relays MESSAGE_ILLEGAL). Nothing of either is stored;
    the broker then stores a normal batch."""
    limit = 4 * 1024 * 1024
    async with InProcessCluster(tmp_path / "c") as cluster:
        broker = cluster.brokers[0]
        await create_topic(broker, "Big", queues=1)
        options = [("grpc.max_send_message_length", 64 * 1024 * 1024)]
        async with (
            GrpcEndpoint(broker, port=0) as endpoint,
            grpc.aio.insecure_channel(f"127.0.0.1:{endpoint.port}", options=options) as channel,
        ):
            stub = MessagingServiceStub(channel)

            def batch(*sizes: int) -> pb.SendMessageRequest:
                return pb.SendMessageRequest(
                    messages=[
                        d.Message(
                            topic=d.Resource(name="Big"),
                            body=b"x" * size,
                            system_properties=d.SystemProperties(
                                message_id=f"big-{i}-{size}", message_type=d.NORMAL
                            ),
                        )
                        for i, size in enumerate(sizes)
                    ]
                )

            one = await stub.SendMessage(batch(limit + 1), metadata=CLIENT_METADATA)
            assert (one.status.code, one.status.message) == (
                d.MESSAGE_BODY_TOO_LARGE,
                f"message body cannot exceed the max {limit}",
            )
            together = await stub.SendMessage(batch(3 << 20, 3 << 20), metadata=CLIENT_METADATA)
            assert together.status.code == d.INTERNAL_SERVER_ERROR
            assert f"exceeds maxMessageSize {limit}" in together.status.message
            assert broker.message_store.get_max_offset_in_queue("Big", 0) == 0
            many = await stub.SendMessage(batch(*[16] * 1000), metadata=CLIENT_METADATA)
            assert many.status.code == d.OK and len(many.entries) == 1000
            await still_serves(stub, broker)


async def test_a_telemetry_stream_that_never_reads_stays_bounded(
    grpc_cluster: GrpcCluster,
) -> None:
    """The client declares a topic and stops reading: the server keeps at most its bounds
    waiting for it, drops the rest, and serves another producer of the same topic, whose
    verdict is stored."""
    stub = grpc_cluster.stub
    clients = grpc_cluster.endpoint.application.clients
    stalled = stub.Telemetry(metadata=(("x-mq-client-id", "stalled"),))  # type: ignore[call-arg]
    publishing = d.Publishing(topics=[d.Resource(name="Stalled")])
    await stalled.write(
        pb.TelemetryCommand(settings=d.Settings(client_type=d.PRODUCER, publishing=publishing))
    )
    channel = await eventually_async(
        lambda: clients.channels.get_channel("stalled"), what="the stalled client's channel"
    )
    big = d.Message(topic=d.Resource(name="Stalled"), body=b"b" * 64 * 1024)
    command = pb.TelemetryCommand(
        recover_orphaned_transaction_command=pb.RecoverOrphanedTransactionCommand(
            message=big, transaction_id="t"
        )
    )
    # 64 MiB offered to a client that reads nothing.
    for _ in range(1024):
        channel.send_command(command)
        assert channel.pending_bytes <= MAX_PENDING_BYTES
        assert channel.outbound.qsize() <= MAX_PENDING_COMMANDS
        await asyncio.sleep(0)  # a turn for the stream's writer, which the client stalls
    assert channel.dropped_count > 0

    # Meanwhile another producer is served: its settings, then a verdict that is stored.
    other = stub.Telemetry(metadata=(("x-mq-client-id", "reader"),))  # type: ignore[call-arg]
    await other.write(
        pb.TelemetryCommand(settings=d.Settings(client_type=d.PRODUCER, publishing=publishing))
    )
    answer = await asyncio.wait_for(other.read(), 10)
    assert isinstance(answer, pb.TelemetryCommand) and answer.status.code == d.OK
    async with Producer("Stalled", namesrv_addr=grpc_cluster.cluster.namesrv_addr) as producer:
        sent = await producer.send_half(
            Message("Stalled", b"kept"), MessageQueue("Stalled", "broker-a", 0)
        )
    _host, offset = decode_message_id(sent.offset_msg_id)
    committed = await stub.EndTransaction(
        pb.EndTransactionRequest(
            topic=d.Resource(name="Stalled"),
            transaction_id=encode_transaction_id(offset, sent.queue_offset),
            resolution=d.COMMIT,
        )
    )
    assert committed.status.code == d.OK
    store = grpc_cluster.broker.message_store
    await eventually_async(
        lambda: store.get_max_offset_in_queue("Stalled", 0) == 1, what="the commit stored"
    )

    # The stalled client goes away: it is unregistered, its queue is released.
    stalled.cancel()
    other.cancel()
    await eventually_async(
        lambda: clients.channels.get_channel("stalled") is None, what="the stalled channel gone"
    )
    await still_serves(stub, grpc_cluster.broker)
