"""``orbitmq start`` serves the gRPC endpoint (issue 19 §2): a real process prints it in its
ready line and answers MessagingService on it; it stops with the broker."""

from __future__ import annotations

import asyncio
import signal
import socket
from pathlib import Path

import grpc.aio

from orbitmq.proxy import MessagingServiceStub
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from tests.support import start_orbitmq


async def query_route(endpoint: str, topic: str) -> pb.QueryRouteResponse:
    async with grpc.aio.insecure_channel(endpoint) as channel:
        request = pb.QueryRouteRequest(topic=d.Resource(name=topic))
        return await MessagingServiceStub(channel).QueryRoute(request, timeout=10)


def test_orbitmq_start_serves_grpc_and_stops_it(tmp_path: Path) -> None:
    process, ready = start_orbitmq(tmp_path / "data", tmp_path / "orbitmq")
    try:
        endpoint = ready[7]
        host, _, port = endpoint.rpartition(":")
        assert host == ready[2].rpartition(":")[0]  # brokerIP1, as the broker's address
        missing = asyncio.run(query_route(endpoint, "NoSuchTopic"))
        assert missing.status.code == d.TOPIC_NOT_FOUND
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    with socket.socket() as probe:
        assert probe.connect_ex((host, int(port))) != 0
