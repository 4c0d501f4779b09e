"""`orbitmq start --brokers 2` as a subprocess: a name server and two broker processes in one
cluster; topics created cluster-wide get queues on both; a producer spreads over both and a
push consumer gets every message; stopping stops every process; a broker killed with -9 is
reported and the command exits 1; a parent killed with -9 leaves no broker behind."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from orbitmq.client import AdminClient, ConsumeContext, Producer, PushConsumer, SendStatus
from orbitmq.common import Message, MessageExt
from orbitmq.store import StoreLock
from tests.eventually import eventually, eventually_async
from tests.support import READY, SMALL_STORE_CONF, run_orbitmq

GROUP_READY = re.compile(
    r"OrbitMQ ready: name server (\S+), brokers (.+?), listening on (?:.+), data in (.+?), "
    r"(console \S+|console off.*?), gRPC (.+)$"
)
BROKER = re.compile(r"(\S+) \((\S+)/(\S+)\)")
MESSAGES = 200


def _start_group(tmp_path: Path, brokers: int = 2) -> tuple[subprocess.Popen[bytes], re.Match[str]]:
    conf = tmp_path / "small.conf"
    conf.write_text(SMALL_STORE_CONF)
    out = tmp_path / "group.out"
    with out.open("wb") as out_file, (tmp_path / "group.err").open("wb") as err_file:
        process = subprocess.Popen(
            [
                *(sys.executable, "-m", "orbitmq.cli", "start", "-c", str(conf)),
                *("--brokers", str(brokers), "--data-dir", str(tmp_path / "data")),
                *("--namesrv-port", "0", "--listen-port", "0"),
            ],
            stdout=out_file,
            stderr=err_file,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )

    def ready() -> re.Match[str] | None:
        assert process.poll() is None, (out.read_text(), (tmp_path / "group.err").read_text())
        lines = out.read_text().splitlines()
        return next((m for m in map(GROUP_READY.match, lines) if m), None)

    try:
        return process, eventually(ready, 60, 0.05, what="the group's ready line")
    except BaseException:
        process.kill()
        process.wait()
        raise


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


async def _produce_and_consume(namesrv: str) -> None:
    async with AdminClient(namesrv_addr=namesrv) as admin:
        info = await admin.cluster_info()
        assert info.cluster_addr_table["DefaultCluster"] == {"broker-a", "broker-b"}
        brokers = await admin.create_topic("GroupTopic", queue_nums=4, cluster="DefaultCluster")
        assert set(brokers) == {"broker-a", "broker-b"}
        route = await admin.topic_route("GroupTopic")
        assert {q.broker_name: q.write_queue_nums for q in route.queue_datas} == {
            "broker-a": 4,
            "broker-b": 4,
        }
        # Every broker registers TBW102: a send to a new topic may go to either.
        tbw = await admin.topic_route("TBW102")
        assert {q.broker_name for q in tbw.queue_datas} == {"broker-a", "broker-b"}
    sent_to: dict[str, int] = {}
    async with Producer("group-pg", namesrv_addr=namesrv) as producer:
        for i in range(MESSAGES):
            result = await producer.send(Message("GroupTopic", f"m-{i}".encode()))
            assert result.send_status is SendStatus.SEND_OK
            name = result.message_queue.broker_name
            sent_to[name] = sent_to.get(name, 0) + 1
    assert set(sent_to) == {"broker-a", "broker-b"}
    assert min(sent_to.values()) >= MESSAGES // 4, sent_to
    seen: set[bytes] = set()

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        seen.update(m.body for m in messages)

    consumer = PushConsumer("group-cg", namesrv_addr=namesrv)
    consumer.subscribe("GroupTopic")
    consumer.register_listener(on_messages)
    await consumer.start()
    try:
        await eventually_async(lambda: len(seen) == MESSAGES, 30)
    finally:
        await consumer.shutdown()
    assert seen == {f"m-{i}".encode() for i in range(MESSAGES)}


def test_two_brokers_serve_one_cluster_and_orbitmq_stop_stops_every_process(
    tmp_path: Path,
) -> None:
    process, ready = _start_group(tmp_path)
    try:
        assert READY.match(ready.group(0)) is None  # the one-broker line is not this one
        brokers = BROKER.findall(ready.group(2))
        assert [(cluster, name) for _, cluster, name in brokers] == [
            ("DefaultCluster", "broker-a"),
            ("DefaultCluster", "broker-b"),
        ]
        assert len({addr for addr, _, _ in brokers}) == 2
        assert len(ready.group(5).split()) == 2  # a gRPC endpoint per broker
        data = tmp_path / "data"
        assert ready.group(3) == str(data.resolve())
        members = _children(process.pid)
        assert len(members) == 2
        asyncio.run(_produce_and_consume(ready.group(1)))
        assert (data / "broker-a" / "commitlog").is_dir()
        assert (data / "broker-b" / "commitlog").is_dir()

        done = run_orbitmq("stop", "--data-dir", str(data))
        assert done.returncode == 0, done.stderr
        assert process.wait(timeout=60) == 0
        assert all(_gone(pid) for pid in members)
        # Each broker stopped cleanly: no abort file left for a recovery to find.
        assert not (data / "broker-a" / "abort").exists()
        assert not (data / "broker-b" / "abort").exists()
        out = (tmp_path / "group.out").read_text()
        assert "[broker-b] OrbitMQ stopped." in out
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_broker_killed_with_minus_9_is_reported_and_the_group_exits_1(tmp_path: Path) -> None:
    process, _ready = _start_group(tmp_path)
    try:
        broker_a, broker_b = _children(process.pid)
        os.kill(broker_b, signal.SIGKILL)
        assert process.wait(timeout=60) == 1
        err = (tmp_path / "group.err").read_text()
        assert f"broker-b (pid {broker_b}) was killed by signal 9 (SIGKILL)" in err
        eventually(lambda: _gone(broker_a), 30, what="broker-a stopped too")
        assert not (tmp_path / "data" / "broker-a" / "abort").exists()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_parent_killed_with_minus_9_leaves_no_broker_behind(tmp_path: Path) -> None:
    process, _ready = _start_group(tmp_path)
    members = _children(process.pid)
    process.kill()
    process.wait()
    try:
        eventually(lambda: all(_gone(p) for p in members), 30, what="every broker stopped")
    finally:
        for pid in members:
            if not _gone(pid):
                os.kill(pid, signal.SIGKILL)
    # They stopped cleanly (their standard input ended), not killed.
    assert not (tmp_path / "data" / "broker-a" / "abort").exists()


def test_a_broker_that_cannot_start_stops_the_group_before_its_ready_line(
    tmp_path: Path,
) -> None:
    held = StoreLock(str(tmp_path / "data" / "broker-b"))
    held.acquire()  # broker-b's store is in use: it cannot start
    try:
        conf = tmp_path / "small.conf"
        conf.write_text(SMALL_STORE_CONF)
        done = run_orbitmq(
            *("start", "-c", str(conf), "--brokers", "2", "--data-dir", str(tmp_path / "data")),
            *("--namesrv-port", "0", "--listen-port", "0"),
            timeout_s=60,
        )
    finally:
        held.release()
    assert done.returncode == 1
    assert "OrbitMQ ready" not in done.stdout
    assert f"is in use by process {os.getpid()}" in done.stderr
    assert "broker-b exited with code 1 before it was ready" in done.stderr
    assert "[broker-a] OrbitMQ stopped." in done.stdout
    assert not (tmp_path / "data" / "broker-a" / "abort").exists()
