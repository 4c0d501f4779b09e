"""``orbitmq start`` and ``orbitmq broker`` as subprocesses (``python -m orbitmq.cli``)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

from orbitmq.common import decode_message_id, decode_messages
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode, TopicRouteData
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION
from orbitmq.remoting import RemotingClient
from tests.component.broker.conftest import (
    pull_request,
    send_header,
    send_request,
    sent_header,
)
from tests.eventually import eventually_async
from tests.support import start_orbitmq


async def send_and_pull(namesrv: str, broker: str) -> None:
    client = RemotingClient(connect_timeout_s=2.0)
    try:
        request = send_request(
            RequestCode.SEND_MESSAGE_V2, send_header("CliTopic", {"TAGS": "t"}), b"hello cli"
        )
        header = sent_header(await client.invoke(broker, request, 5.0))
        assert decode_message_id(header.msg_id)[0][1] == int(broker.rsplit(":", 1)[1])
        pull = pull_request("CliTopic", header.queue_id, 0, sys_flag=FLAG_SUBSCRIPTION)
        response = await client.invoke(broker, pull, 5.0)
        assert response.code == ResponseCode.SUCCESS, response.remark
        assert [m.body for m in decode_messages(response.body)] == [b"hello cli"]

        # The new topic is routed by the embedded name server.
        async def routed() -> RemotingCommand | None:
            request = RemotingCommand.create_request(
                RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "CliTopic"}
            )
            route = await client.invoke(namesrv, request, 5.0)
            return route if route.code == ResponseCode.SUCCESS else None

        route = await eventually_async(routed, 5, what="CliTopic's route")
        brokers = TopicRouteData.from_json(route.body).broker_datas
        assert [b.broker_addrs for b in brokers] == [{0: broker}]
    finally:
        await client.close()


def test_start_serves_and_stops_cleanly_on_sigterm(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    # The embedded defaults, as `make run` starts them (1 GiB commit log file included).
    process, ready = start_orbitmq(data_dir, tmp_path / "orbitmq", small_files=False)
    try:
        namesrv, broker, cluster, name, shown_dir, _console, _grpc = ready.groups()
        assert (cluster, name) == ("DefaultCluster", "broker-a")
        assert Path(shown_dir) == data_dir.resolve()
        abort = data_dir / "abort"
        assert abort.exists()
        asyncio.run(send_and_pull(namesrv, broker))
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0, (tmp_path / "orbitmq.err").read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert not abort.exists()
    assert (data_dir / "config" / "topics.json").exists()


def test_broker_with_a_bad_value_exits_non_zero_naming_the_key(tmp_path: Path) -> None:
    conf = tmp_path / "bad.conf"
    conf.write_text(f"storePathRootDir={tmp_path / 'store'}\nlistenPort=notaport\n")
    result = subprocess.run(
        [sys.executable, "-m", "orbitmq.cli", "broker", "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode != 0
    assert "listenPort" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "store").exists()
