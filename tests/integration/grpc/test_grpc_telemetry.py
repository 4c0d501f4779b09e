"""Telemetry and EndTransaction over a real gRPC socket, against an in-process broker: the
settings exchange answered at once, the broker's transaction check reaching a gRPC producer
as a RecoverOrphanedTransactionCommand (only one that declared the half's topic, with the
body digest the clients need), the producer's verdict by EndTransaction (commit stores the
message once, rollback never), the print-thread-stack and verify-message commands relayed,
and the stream's end taking the client out of the broker's registries."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import grpc
import grpc.aio
import pytest

from orbitmq.client import Producer, queue_offsets, read_queue_range
from orbitmq.common import Message, MessageQueue, decode_message_id
from orbitmq.common.message_decoder import encode_message
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body.topic import TopicConfig
from orbitmq.proxy import GrpcEndpoint, MessagingServiceStub
from orbitmq.proxy.transaction_id import encode_transaction_id
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(60)

TOPIC = "GrpcTxTopic"


class TelemetryStream:
    """One client's Telemetry call: write commands, read the server's."""

    def __init__(self, call: Any) -> None:
        self.call = call

    async def write(self, command: pb.TelemetryCommand) -> None:
        await self.call.write(command)

    async def read(self, timeout_s: float = 10) -> pb.TelemetryCommand:
        command = await asyncio.wait_for(self.call.read(), timeout_s)
        assert command is not grpc.aio.EOF  # type: ignore[attr-defined]
        return command  # type: ignore[no-any-return]


@asynccontextmanager
async def telemetry(stub: MessagingServiceStub, client_id: str) -> AsyncIterator[TelemetryStream]:
    metadata = (("x-mq-client-id", client_id), ("x-mq-language", "PYTHON"))
    call = stub.Telemetry(metadata=metadata)  # type: ignore[call-arg]
    try:
        yield TelemetryStream(call)
    finally:
        call.cancel()


def producer_settings(*topics: str) -> pb.TelemetryCommand:
    publishing = d.Publishing(topics=[d.Resource(name=t) for t in topics])
    return pb.TelemetryCommand(settings=d.Settings(client_type=d.PRODUCER, publishing=publishing))


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    # Halves are due for a check as soon as they are stored.
    settings = {"transaction_time_out": 0, "transaction_check_interval": 3_600_000}
    async with InProcessCluster(tmp_path / "c", broker_settings=settings) as cluster:
        yield cluster


@asynccontextmanager
async def endpoint_stub(cluster: InProcessCluster) -> AsyncIterator[MessagingServiceStub]:
    async with (
        GrpcEndpoint(cluster.brokers[0], port=0) as endpoint,
        grpc.aio.insecure_channel(f"127.0.0.1:{endpoint.port}") as channel,
    ):
        yield MessagingServiceStub(channel)


async def send_halves(cluster: InProcessCluster, *bodies: bytes) -> list[str]:
    """Store halves for TOPIC queue 0, with the topic as producer group (as a gRPC send
    records them); their transaction ids. The remoting producer is gone afterwards, so
    only gRPC producers can be asked about them."""
    ids = []
    async with Producer(TOPIC, namesrv_addr=cluster.namesrv_addr) as producer:
        for body in bodies:
            staged = Message(TOPIC, body)
            staged.tags = "TagTx"
            staged.keys = ["k1", "k2"]
            result = await producer.send_half(staged, MessageQueue(TOPIC, "broker-a", 0))
            _host, commit_log_offset = decode_message_id(result.offset_msg_id)
            ids.append(encode_transaction_id(commit_log_offset, result.queue_offset))
    return ids


async def visible(cluster: InProcessCluster) -> list[bytes]:
    store = cluster.brokers[0].message_store
    assert store.reput_message_service.wait_for_dispatch(store.commit_log.max_offset, 10)
    low, high = (await queue_offsets(cluster.namesrv_addr, TOPIC))[
        MessageQueue(TOPIC, "broker-a", 0)
    ]
    return [
        m.body
        async for batch in read_queue_range(cluster.namesrv_addr, TOPIC, "broker-a", 0, low, high)
        for m in batch
    ]


async def test_settings_are_answered_at_once_with_the_servers_values(
    cluster: InProcessCluster,
) -> None:
    async with endpoint_stub(cluster) as stub, telemetry(stub, "p1") as stream:
        await stream.write(producer_settings(TOPIC))
        answer = await stream.read()
        assert answer.status.code == d.OK
        settings = answer.settings
        assert [t.name for t in settings.publishing.topics] == [TOPIC]
        assert settings.publishing.max_body_size == 4 * 1024 * 1024
        # Types are checked only where topics carry one (the message.type attribute).
        typed = hasattr(TopicConfig(), "attributes")
        assert settings.publishing.validate_message_type == typed
        assert settings.backoff_policy.max_attempts == 3
        assert settings.backoff_policy.exponential_backoff.initial.ToMilliseconds() == 10
        consumer = d.Settings(
            client_type=d.SIMPLE_CONSUMER,
            subscription=d.Subscription(
                group=d.Resource(name="g1"),
                subscriptions=[d.SubscriptionEntry(topic=d.Resource(name=TOPIC))],
            ),
        )
        async with telemetry(stub, "c1") as consumer_stream:
            await consumer_stream.write(pb.TelemetryCommand(settings=consumer))
            merged = (await consumer_stream.read()).settings
        assert merged.subscription.receive_batch_size == 32
        assert merged.subscription.long_polling_timeout.ToSeconds() == 20
        assert merged.backoff_policy.max_attempts == 17  # the group's retryMaxTimes + 1
        assert len(merged.backoff_policy.customized_backoff.next) == 18
        # Settings without publishing or subscription end the stream: INVALID_ARGUMENT.
        async with telemetry(stub, "x1") as bad:
            await bad.write(pb.TelemetryCommand(settings=d.Settings(client_type=d.PRODUCER)))
            with pytest.raises(grpc.aio.AioRpcError) as caught:
                await bad.read()
            assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_check_back_commit_and_rollback_through_telemetry(
    cluster: InProcessCluster,
) -> None:
    broker = cluster.brokers[0]
    checker = broker.transactional_message_check_service
    assert checker is not None
    async with (
        endpoint_stub(cluster) as stub,
        telemetry(stub, "producer-of-tx") as producer,
        telemetry(stub, "producer-of-other") as other,
    ):
        await producer.write(producer_settings(TOPIC))
        await other.write(producer_settings("SomeOtherTopic"))
        assert (await producer.read()).HasField("settings")
        assert (await other.read()).HasField("settings")
        commit_id, rollback_id = await send_halves(cluster, b"commit-me", b"roll-me-back")
        assert await visible(cluster) == []

        await checker.check()
        asked = [await producer.read(), await producer.read()]
        commands = [c.recover_orphaned_transaction_command for c in asked]
        bodies = {c.message.body: c for c in commands}
        assert set(bodies) == {b"commit-me", b"roll-me-back"}
        for body, command in bodies.items():
            system = command.message.system_properties
            assert command.message.topic.name == TOPIC
            assert system.body_digest.type == d.MD5
            assert system.body_digest.checksum == hashlib.md5(body).hexdigest().upper()
            assert system.tag == "TagTx" and list(system.keys) == ["k1", "k2"]
            assert system.message_type == d.TRANSACTION and system.message_id
        # The producer of another topic is not asked.
        with pytest.raises(TimeoutError):
            await other.read(timeout_s=0.5)

        async def verdict(command: Any, resolution: Any) -> d.Status:
            response = await stub.EndTransaction(
                pb.EndTransactionRequest(
                    topic=d.Resource(name=TOPIC),
                    message_id=command.message.system_properties.message_id,
                    transaction_id=command.transaction_id,
                    resolution=resolution,
                    source=d.SOURCE_SERVER_CHECK,
                )
            )
            return response.status

        assert (await verdict(bodies[b"commit-me"], d.COMMIT)).code == d.OK
        assert (await verdict(bodies[b"commit-me"], d.COMMIT)).code == d.OK  # retried: once
        assert (await verdict(bodies[b"roll-me-back"], d.ROLLBACK)).code == d.OK
        assert await visible(cluster) == [b"commit-me"]
        # The ids handed out at the send were the halves' before the check put them back;
        # a late verdict with one of them still finds the half, already resolved.
        late = await stub.EndTransaction(
            pb.EndTransactionRequest(
                topic=d.Resource(name=TOPIC), transaction_id=commit_id, resolution=d.COMMIT
            )
        )
        assert late.status.code == d.OK
        assert await visible(cluster) == [b"commit-me"]
        assert rollback_id != commit_id


async def test_end_transaction_refuses_what_names_no_half(cluster: InProcessCluster) -> None:
    async with endpoint_stub(cluster) as stub:
        [tx] = await send_halves(cluster, b"half")

        async def end(topic: str, transaction_id: str) -> d.Status:
            request = pb.EndTransactionRequest(
                topic=d.Resource(name=topic), transaction_id=transaction_id, resolution=d.COMMIT
            )
            return (await stub.EndTransaction(request)).status

        assert (await end(TOPIC, "")).code == d.INVALID_TRANSACTION_ID
        assert (await end(TOPIC, "not-ours")).code == d.INVALID_TRANSACTION_ID
        assert (await end("", tx)).code == d.ILLEGAL_TOPIC
        wrong_topic = await end("OtherTopic", tx)
        assert wrong_topic.code == d.BAD_REQUEST and "producer group wrong" in wrong_topic.message
        nowhere = await end(TOPIC, encode_transaction_id(10**9, 0))
        assert nowhere.code == d.BAD_REQUEST
        unknown = pb.EndTransactionRequest(
            topic=d.Resource(name=TOPIC),
            transaction_id=tx,
            resolution=d.TRANSACTION_RESOLUTION_UNSPECIFIED,
        )
        assert (await stub.EndTransaction(unknown)).status.code == d.OK
        assert await visible(cluster) == []
        assert (await end(TOPIC, tx)).code == d.OK
        assert await visible(cluster) == [b"half"]


async def test_thread_stack_and_verify_message_are_relayed(cluster: InProcessCluster) -> None:
    broker = cluster.brokers[0]
    async with endpoint_stub(cluster) as stub, telemetry(stub, "c-stack") as stream:
        await stream.write(producer_settings(TOPIC))
        await stream.read()
        [info] = broker.producer_manager.get_group_channel_table(TOPIC).values()
        request = RemotingCommand.create_request(RequestCode.GET_CONSUMER_RUNNING_INFO, {})
        asking = asyncio.ensure_future(info.channel.invoke(request, 10))
        command = await stream.read()
        nonce = command.print_thread_stack_trace_command.nonce
        assert nonce
        # An answer with another nonce answers nothing; the right one answers the request.
        await stream.write(
            pb.TelemetryCommand(thread_stack_trace=pb.ThreadStackTrace(nonce="unknown"))
        )
        await stream.write(
            pb.TelemetryCommand(
                status=d.Status(code=d.OK),
                thread_stack_trace=pb.ThreadStackTrace(nonce=nonce, thread_stack_trace="main"),
            )
        )
        response = await asking
        assert response.code == ResponseCode.SUCCESS and b'"jstack":"main"' in response.body

        verify = RemotingCommand.create_request(RequestCode.CONSUME_MESSAGE_DIRECTLY, {})
        await send_halves(cluster, b"verify")
        store = broker.message_store
        stored = store.look_message_by_offset(0)
        assert stored is not None
        verify.body = encode_message(stored)
        asking = asyncio.ensure_future(info.channel.invoke(verify, 10))
        command = await stream.read()
        assert command.verify_message_command.message.body == stored.body
        await stream.write(
            pb.TelemetryCommand(
                status=d.Status(code=d.FAILED_TO_CONSUME_MESSAGE),
                verify_message_result=pb.VerifyMessageResult(
                    nonce=command.verify_message_command.nonce
                ),
            )
        )
        response = await asking
        assert b'"consumeResult":"CR_LATER"' in response.body


async def test_the_streams_end_unregisters_the_client(cluster: InProcessCluster) -> None:
    broker = cluster.brokers[0]
    async with endpoint_stub(cluster) as stub:
        async with telemetry(stub, "leaving") as stream:
            await stream.write(producer_settings(TOPIC))
            await stream.read()
            assert broker.producer_manager.get_group_channel_table(TOPIC)
        await eventually_async(
            lambda: not broker.producer_manager.get_group_channel_table(TOPIC),
            what="the producer unregistered",
        )
        # The client may come back on a new stream.
        async with telemetry(stub, "leaving") as stream:
            await stream.write(producer_settings(TOPIC))
            assert (await stream.read()).status.code == d.OK
            assert broker.producer_manager.get_available_channel(TOPIC) is not None
