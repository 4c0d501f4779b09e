"""Replay the frames real RocketMQ clients and a real broker sent to a real 4.9.8 name server
(../shared/compat) against ours, byte for byte, and compare the answers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orbitmq.protocol import (
    RequestCode,
    ResponseCode,
    TopicConfig,
    TopicRouteData,
    decode_command,
)
from orbitmq.remoting import RemotingClient
from tests.component.namesrv.conftest import ControllerFactory
from tests.component.namesrv.support import register_request
from tests.component.remoting.support import RawConnection
from tests.support import compat_recordings

RECORDINGS = compat_recordings()


def _namesrv_frames(path: Path) -> list[dict[str, Any]]:
    frames = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [f for f in frames if f["server_port"] == 9876]


def _pairs(frames: list[dict[str, Any]], code: int) -> list[tuple[bytes, dict[str, Any] | None]]:
    """Each recorded request with ``code`` and the response with its opaque on the same
    client connection (None when the recording does not hold it)."""
    pairs: list[tuple[bytes, dict[str, Any] | None]] = []
    for index, frame in enumerate(frames):
        if frame["dir"] != "C->S" or frame["header"]["code"] != code:
            continue
        key = (frame["client_port"], frame["header"]["opaque"])
        answer = next(
            (
                f
                for f in frames[index + 1 :]
                if f["dir"] == "S->C" and (f["client_port"], f["header"]["opaque"]) == key
            ),
            None,
        )
        pairs.append((bytes.fromhex(frame["hex"]), answer))
    return pairs


def _topics_seen(queries: list[tuple[bytes, dict[str, Any] | None]]) -> dict[str, TopicRouteData]:
    """The last route the real name server answered for each topic."""
    routes = {}
    for request, answer in queries:
        if answer is not None and answer["header"]["code"] == ResponseCode.SUCCESS:
            topic = decode_command(request[4:]).ext_fields["topic"]
            routes[topic] = TopicRouteData.from_json(answer["body"])
    return routes


@pytest.mark.timeout(20)
@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.name.split("__")[1])
async def test_recorded_route_queries_get_the_recorded_answers(
    controller_factory: ControllerFactory, client: RemotingClient, recording: Path
) -> None:
    queries = _pairs(_namesrv_frames(recording), RequestCode.GET_ROUTEINFO_BY_TOPIC)
    assert queries
    routes = _topics_seen(queries)
    namesrv = await controller_factory()
    raw = await RawConnection.open("127.0.0.1", namesrv.port)
    try:
        # Before any broker registered: every topic is unknown, with RocketMQ's remark.
        for request, _ in queries:
            await raw.send(request)
            answer = await raw.read_command()
            topic = decode_command(request[4:]).ext_fields["topic"]
            assert answer.code == ResponseCode.TOPIC_NOT_EXIST
            assert answer.remark == (
                f"No topic route info in name server for the topic: {topic}\n"
                "See http://rocketmq.apache.org/docs/faq/ for further details."
            )
    finally:
        await raw.close()
    # The recorded REGISTER_BROKER frames are cut short in the recordings, so the broker's
    # topics are registered from the routes the real name server answered.
    topics = [
        TopicConfig(topic, q.read_queue_nums, q.write_queue_nums, q.perm, topic_sys_flag=0)
        for topic, route in routes.items()
        for q in route.queue_datas
    ]
    registered = await client.invoke(namesrv.address, register_request(*topics), 3.0)
    assert registered.code == ResponseCode.SUCCESS
    raw = await RawConnection.open("127.0.0.1", namesrv.port)
    try:
        for request, recorded in queries:
            assert recorded is not None
            await raw.send(request)  # the recorded bytes, as the real client sent them
            answer = await raw.read_command()
            sent = decode_command(request[4:])
            topic = sent.ext_fields["topic"]
            assert answer.is_response and answer.opaque == sent.opaque
            if topic in routes:
                # Asked before or after the broker created the topic: our table has it.
                assert answer.code == ResponseCode.SUCCESS
                assert TopicRouteData.from_json(answer.body) == routes[topic]
            else:
                assert answer.code == recorded["header"]["code"] == ResponseCode.TOPIC_NOT_EXIST
                assert answer.remark == recorded["header"]["remark"]
    finally:
        await raw.close()
