"""The gRPC server beside the broker: it serves MessagingService on grpcServerPort over a
real socket, answers RPCs it does not serve UNIMPLEMENTED, refuses a busy port, stays off
with -1."""

from __future__ import annotations

import socket

import grpc
import grpc.aio
import pytest

from orbitmq.proxy import GrpcEndpoint, MessagingServiceStub, start_grpc_endpoint
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from orbitmq.testing import InProcessCluster
from tests.integration.grpc.conftest import GrpcCluster


async def test_a_served_rpc_answers_over_a_real_socket(grpc_cluster: GrpcCluster) -> None:
    response = await grpc_cluster.stub.QueryRoute(
        pb.QueryRouteRequest(topic=d.Resource(name="NoSuchTopic"))
    )
    assert response.status.code == d.TOPIC_NOT_FOUND


async def test_an_rpc_not_served_answers_unimplemented(grpc_cluster: GrpcCluster) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await grpc_cluster.stub.SyncLiteSubscription(pb.SyncLiteSubscriptionRequest())
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_a_busy_port_fails_to_start(grpc_cluster: GrpcCluster) -> None:
    second = GrpcEndpoint(grpc_cluster.broker, port=grpc_cluster.endpoint.port)
    with pytest.raises(OSError, match="cannot listen"):
        await second.start()
    # The first still serves.
    response = await grpc_cluster.stub.QueryRoute(
        pb.QueryRouteRequest(topic=d.Resource(name="NoSuchTopic"))
    )
    assert response.status.code == d.TOPIC_NOT_FOUND


async def test_port_minus_one_serves_nothing(tmp_path: object) -> None:
    async with InProcessCluster(str(tmp_path), broker_settings={"grpc_server_port": -1}) as c:
        assert await start_grpc_endpoint(c.brokers[0]) is None


async def test_stop_closes_the_port(grpc_cluster: GrpcCluster) -> None:
    port = grpc_cluster.endpoint.port
    await grpc_cluster.endpoint.stop()
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await MessagingServiceStub(channel).Heartbeat(pb.HeartbeatRequest(), timeout=2)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE
