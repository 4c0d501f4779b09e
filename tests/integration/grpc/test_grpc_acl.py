"""ACL over gRPC on a real socket: a broker with aclEnable=true and a plain_acl.yml checks
the 5.x clients' signed metadata on every RPC, by the same accounts and rules as remoting:
signed calls within an account's rights pass, a right not granted is FORBIDDEN, forged or
missing credentials are UNAUTHORIZED, a refused Telemetry stream ends, and the broker keeps
serving throughout."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import grpc.aio
import pytest

from orbitmq.client import ClientConfig, Producer
from orbitmq.common import Message, MessageQueue, decode_message_id
from orbitmq.proxy import GrpcEndpoint, MessagingServiceStub
from orbitmq.proxy.transaction_id import encode_transaction_id
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from orbitmq.testing import InProcessCluster

pytestmark = pytest.mark.timeout(60)

PLAIN_ACL_YML = """\
accounts:
  - accessKey: grpcProducer
    secretKey: grpc-secret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: [Orders=PUB, Audit=SUB]
  - accessKey: operator
    secretKey: operator-secret
    admin: true
"""
DATE = "20261207T120000Z"
Metadata = tuple[tuple[str, str], ...]


def signed(access_key: str, secret: str, client_id: str = "acl-client") -> Metadata:
    """The metadata the 5.x clients send (hex HMAC-SHA1 of x-mq-date-time)."""
    signature = hmac.new(secret.encode(), DATE.encode(), hashlib.sha1).hexdigest()
    return (
        ("x-mq-client-id", client_id),
        ("x-mq-date-time", DATE),
        ("x-mq-language", "PYTHON"),
        (
            "authorization",
            f"MQv2-HMAC-SHA1 Credential={access_key}, SignedHeaders=x-mq-date-time, "
            f"Signature={signature}",
        ),
    )


@pytest.fixture
async def acl_stub(tmp_path: Path) -> AsyncIterator[tuple[InProcessCluster, MessagingServiceStub]]:
    (tmp_path / "home" / "conf").mkdir(parents=True)
    (tmp_path / "home" / "conf" / "plain_acl.yml").write_text(PLAIN_ACL_YML)
    settings = {"acl_enable": True, "rocketmq_home": str(tmp_path / "home")}
    async with (
        InProcessCluster(tmp_path / "cluster", broker_settings=settings) as cluster,
        GrpcEndpoint(cluster.brokers[0], port=0) as endpoint,
        grpc.aio.insecure_channel(f"127.0.0.1:{endpoint.port}") as channel,
    ):
        yield cluster, MessagingServiceStub(channel)


async def half_in(cluster: InProcessCluster, topic: str) -> str:
    """A half message of ``topic`` (group = topic), stored by a signed remoting producer."""
    client = ClientConfig(
        namesrv_addr=cluster.namesrv_addr, access_key="operator", secret_key="operator-secret"
    )
    async with Producer(topic, client_config=client) as producer:
        result = await producer.send_half(
            Message(topic, b"half"), MessageQueue(topic, "broker-a", 0)
        )
    _host, offset = decode_message_id(result.offset_msg_id)
    return encode_transaction_id(offset, result.queue_offset)


def end(topic: str, transaction_id: str) -> pb.EndTransactionRequest:
    return pb.EndTransactionRequest(
        topic=d.Resource(name=topic), transaction_id=transaction_id, resolution=d.ROLLBACK
    )


async def test_rights_are_checked_per_rpc(
    acl_stub: tuple[InProcessCluster, MessagingServiceStub],
) -> None:
    cluster, stub = acl_stub
    orders = await half_in(cluster, "Orders")
    audit = await half_in(cluster, "Audit")
    producer = signed("grpcProducer", "grpc-secret")
    route = await stub.QueryRoute(
        pb.QueryRouteRequest(topic=d.Resource(name="Orders")), metadata=producer
    )
    assert route.status.code == d.OK and route.message_queues
    hidden = await stub.QueryRoute(
        pb.QueryRouteRequest(topic=d.Resource(name="Secret")), metadata=producer
    )
    assert (hidden.status.code, hidden.status.message) == (
        d.FORBIDDEN,
        "No default permission for topic:Secret",
    )
    allowed = await stub.EndTransaction(end("Orders", orders), metadata=producer)
    assert allowed.status.code == d.OK
    refused = await stub.EndTransaction(end("Audit", audit), metadata=producer)
    assert refused.status.code == d.FORBIDDEN
    assert refused.status.message == "No default permission for topic:Audit"


async def test_forged_and_missing_credentials_are_unauthorized(
    acl_stub: tuple[InProcessCluster, MessagingServiceStub],
) -> None:
    cluster, stub = acl_stub
    orders = await half_in(cluster, "Orders")
    forged = await stub.EndTransaction(
        end("Orders", orders), metadata=signed("grpcProducer", "guessed")
    )
    assert forged.status.code == d.UNAUTHORIZED
    assert forged.status.message == "Check signature failed for accessKey=grpcProducer"
    unknown = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=signed("intruder", "x"))
    assert (unknown.status.code, unknown.status.message) == (
        d.UNAUTHORIZED,
        "No acl config for intruder",
    )
    anonymous = await stub.Heartbeat(pb.HeartbeatRequest(), metadata=(("x-mq-client-id", "a"),))
    assert anonymous.status.code == d.UNAUTHORIZED
    garbage = (("x-mq-client-id", "a"), ("authorization", "MQv2-HMAC-SHA1 nonsense"))
    assert (await stub.Heartbeat(pb.HeartbeatRequest(), metadata=garbage)).status.code == (
        d.UNAUTHORIZED
    )
    # Nothing was resolved by the refused calls; the broker still serves the account.
    allowed = await stub.EndTransaction(
        end("Orders", orders), metadata=signed("grpcProducer", "grpc-secret")
    )
    assert allowed.status.code == d.OK


async def test_telemetry_settings_beyond_the_accounts_rights_end_the_stream(
    acl_stub: tuple[InProcessCluster, MessagingServiceStub],
) -> None:
    cluster, stub = acl_stub

    async def declare(metadata: Metadata, topic: str) -> pb.TelemetryCommand:
        call = stub.Telemetry(metadata=metadata)  # type: ignore[call-arg]
        try:
            publishing = d.Publishing(topics=[d.Resource(name=topic)])
            await call.write(
                pb.TelemetryCommand(
                    settings=d.Settings(client_type=d.PRODUCER, publishing=publishing)
                )
            )
            answer = await call.read()
            assert isinstance(answer, pb.TelemetryCommand)
            return answer
        finally:
            call.cancel()

    answer = await declare(signed("grpcProducer", "grpc-secret", "ok"), "Orders")
    assert answer.status.code == d.OK
    with pytest.raises(grpc.aio.AioRpcError) as forbidden:
        await declare(signed("grpcProducer", "grpc-secret", "no"), "Audit")
    assert forbidden.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert forbidden.value.details() == "No default permission for topic:Audit"
    with pytest.raises(grpc.aio.AioRpcError) as forged:
        await declare(signed("grpcProducer", "wrong", "forged"), "Orders")
    assert forged.value.code() == grpc.StatusCode.UNAUTHENTICATED
    # Only the accepted client was registered as a producer of its topic.
    assert not cluster.brokers[0].producer_manager.get_group_channel_table("Audit")
