"""OrbitMQ in peerbench's line-up (``/work/shared/peerbench``), through OrbitMQ's own asyncio
client: ``Producer`` (one batch request per ``produce_batch``) and ``PushConsumer``.

Run from the peerbench directory, with its venv (which needs orjson and numpy for the client):

    cd /work/shared/peerbench
    /tmp/peerbench/venv/bin/pip install orjson==3.13.0 numpy==2.4.6
    PYTHONPATH=/work/main/benchmarks:/work/main/src /tmp/peerbench/venv/bin/python -m peerbench \\
        --peers redis-always,peerbench_orbitmq:OrbitMQSync,peerbench_orbitmq:OrbitMQAsync \\
        -n 50000 --sizes 1024

The harness manages the broker as it manages the peers: importing this module adds
``orbitmq-sync`` and ``orbitmq-async`` to ``peerbench.servers.SERVERS`` (no file under
``/work/shared`` changes), so the harness starts ``orbitmq start`` (name server and broker in
one process, loopback, fresh data directory under ``/tmp/peerbench/data/``), measures its CPU
by PID exactly as for the peers, and stops it by PID. The broker runs on the project's own
venv (``/work/main/.venv/bin/python``, or ``$ORBITMQ_PYTHON``).

Ports: ``--port orbitmq_ns=17876 --port orbitmq=17911`` (the defaults).

Broker settings besides the durability (``broker.conf`` below): a pull may return up to 512
messages / 1 MiB (RocketMQ's defaults, 32 messages / 256 KiB, would cap a pull far below the
``--batch`` 500 that Redis's ``XREADGROUP COUNT`` gets).

Consumer groups: ``reset(topic)`` deletes and recreates the topic (4 queues) and names a new
group for it; the name travels to the harness's client processes in the options dictionary,
which the harness hands to every process it spawns after ``reset``.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import itertools
import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from peerbench import servers as srv
from peerbench.adapter import Adapter, Handler

from orbitmq.client import AdminClient, Producer, PushConsumer, PushConsumerConfig, SendStatus
from orbitmq.client.producer import ProducerConfig
from orbitmq.common import Message, MessageExt
from orbitmq.protocol import ConsumeFromWhere

DEFAULT_NAMESRV_PORT = 17876
DEFAULT_BROKER_PORT = 17911
QUEUE_NUMS = 4
READY_PREFIX = "OrbitMQ ready:"
REPO = Path(__file__).resolve().parents[1]
_GROUP_SEQ = itertools.count(1)


def _ports(ports: dict[str, int]) -> tuple[int, int]:
    return (
        ports.get("orbitmq_ns", DEFAULT_NAMESRV_PORT),
        ports.get("orbitmq", DEFAULT_BROKER_PORT),
    )


class _OrbitMQServer(srv.Server):
    """``orbitmq start`` (embedded name server + broker, one process) on loopback."""

    name = "orbitmq"
    flush_disk_type = "SYNC_FLUSH"

    def start(self) -> None:
        self.fresh_dir()
        python = os.environ.get("ORBITMQ_PYTHON", str(REPO / ".venv" / "bin" / "python"))
        namesrv_port, broker_port = _ports(self.ports)
        conf = os.path.join(self.data_dir, "broker.conf")
        with open(conf, "w") as f:
            f.write(
                "brokerClusterName=DefaultCluster\n"
                "brokerName=broker-a\n"
                "brokerId=0\n"
                f"brokerIP1={srv.HOST}\n"
                f"flushDiskType={self.flush_disk_type}\n"
                "maxTransferCountOnMessageInMemory=512\n"
                "maxTransferBytesOnMessageInMemory=1048576\n"
                # No web console: not part of what is measured, and 8080 may be taken.
                "consolePort=-1\n"
            )
        store = os.path.join(self.data_dir, "store")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        env.pop("PYTHONPATH", None)
        argv = [python, "-m", "orbitmq.cli", "--log-level", "WARNING", "start", "-c", conf]
        argv += ["--data-dir", store, "--namesrv-port", str(namesrv_port)]
        argv += ["--listen-port", str(broker_port)]
        p = self._spawn(argv, env=env)
        self.version = f"orbitmq {_version(python)} ({self.flush_disk_type})"
        log_path = os.path.join(self.data_dir, "server.log")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(log_path, errors="replace") as f:
                if READY_PREFIX in f.read():
                    return
            if p.poll() is not None:
                raise RuntimeError(f"orbitmq exited early with rc={p.returncode}")
            time.sleep(0.1)
        raise TimeoutError("orbitmq printed no ready line in 30 s")


def _version(python: str) -> str:
    try:
        out = subprocess.run(
            [python, "-c", "import importlib.metadata as m; print(m.version('orbitmq'))"],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
        return out.stdout.strip() or "?"
    except Exception:
        return "?"


class OrbitMQSyncServer(_OrbitMQServer):
    name = "orbitmq-sync"
    flush_disk_type = "SYNC_FLUSH"


class OrbitMQAsyncServer(_OrbitMQServer):
    name = "orbitmq-async"
    flush_disk_type = "ASYNC_FLUSH"


srv.SERVERS.setdefault(OrbitMQSyncServer.name, OrbitMQSyncServer)
srv.SERVERS.setdefault(OrbitMQAsyncServer.name, OrbitMQAsyncServer)


class OrbitMQSync(Adapter):
    name = "orbitmq-sync"
    server = "orbitmq-sync"
    durability = (
        "SEND_OK only after the commit log is fsynced (flushDiskType=SYNC_FLUSH, group "
        "commit: one fsync answers every send written before it); one batch request per "
        "produce_batch; consumer offsets committed to the broker"
    )

    def __init__(self, opts: dict[str, Any]) -> None:
        super().__init__(opts)
        namesrv_port, _ = _ports(opts["ports"])
        self.namesrv_addr = f"{opts['host']}:{namesrv_port}"
        self.producer: Producer | None = None
        self._producer_lock = asyncio.Lock()

    async def connect(self) -> None:
        try:
            version = importlib.metadata.version("orbitmq")
        except importlib.metadata.PackageNotFoundError:
            version = "source"
        self.client = f"orbitmq.client {version} (Producer batch + PushConsumer)"

    async def _producer(self) -> Producer:
        # Made on first use: the consume processes never start one.
        async with self._producer_lock:
            if self.producer is None:
                producer = Producer(
                    f"pb-producer-{os.getpid()}",
                    namesrv_addr=self.namesrv_addr,
                    config=ProducerConfig(send_msg_timeout_s=30.0),
                )
                await producer.start()
                self.producer = producer
            return self.producer

    async def reset(self, topic: str) -> None:
        admin = AdminClient(namesrv_addr=self.namesrv_addr)
        deadline = time.monotonic() + 30
        while True:  # the broker registers with the name server just after it starts
            try:
                await admin.start()
                if not await admin.master_addrs():
                    raise RuntimeError("no broker registered yet")
                break
            except Exception:
                await admin.shutdown()
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)
                admin = AdminClient(namesrv_addr=self.namesrv_addr)
        try:
            with contextlib.suppress(Exception):
                await admin.delete_topic(topic)
            await admin.create_topic(topic, queue_nums=QUEUE_NUMS)
        finally:
            await admin.shutdown()
        groups = self.opts.setdefault("orbitmq_groups", {})
        groups[topic] = f"pb-{topic}-{os.getpid()}-{time.time_ns()}-{next(_GROUP_SEQ)}"
        if self.producer is not None:  # the queues may have changed: route again
            await self.producer.instance.update_topic_route(topic)

    async def produce_batch(self, topic: str, payloads: Sequence[bytes]) -> None:
        producer = self.producer or await self._producer()
        result = await producer.send([Message(topic, p) for p in payloads])
        if result.send_status is not SendStatus.SEND_OK:
            raise RuntimeError(f"send answered {result.send_status.name}")

    async def consume(self, topic: str, n: int, handler: Handler | None, deadline: float) -> int:
        batch = self.opts["batch"]
        group = self.opts.get("orbitmq_groups", {}).get(topic, f"pb-{topic}")
        config = PushConsumerConfig(
            consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            pull_batch_size=batch,
            consume_message_batch_max_size=batch,
            pull_threshold_for_queue=max(1000, 2 * batch),
            consume_concurrently_max_span=max(2000, 4 * batch),
        )
        consumer = PushConsumer(group, namesrv_addr=self.namesrv_addr, config=config)
        got = 0
        enough = asyncio.Event()

        async def on_messages(msgs: Sequence[MessageExt], _context: object) -> None:
            nonlocal got
            if handler is not None:
                handler([m.body for m in msgs])
            got += len(msgs)
            if got >= n:
                enough.set()

        consumer.subscribe(topic, "*")
        consumer.register_listener(on_messages)
        await consumer.start()
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(enough.wait(), max(0.0, deadline - time.monotonic()))
        finally:
            await consumer.shutdown()  # commits the consumed offsets (the acks)
        return got

    async def close(self) -> None:
        if self.producer is not None:
            await self.producer.shutdown()
            self.producer = None


class OrbitMQAsync(OrbitMQSync):
    name = "orbitmq-async"
    server = "orbitmq-async"
    durability = (
        "SEND_OK after the write to the mapped commit log; fsync in the background every "
        "500 ms (flushDiskType=ASYNC_FLUSH): acked data since the last flush can be lost "
        "on power failure"
    )
