"""POP consume next to pull consume over remoting, 1 KiB messages, in the same run, against
a real ``orbitmq start`` process (name server and broker in their own process, the clients
here on one event loop).

1. ``--messages`` messages are sent to a 4-queue topic (64 sends in flight).
2. pull: ``--workers`` tasks pull the four queues from offset 0 (32 a pull) until every
   message was read; msg/s over that span.
3. POP + ACK: the same number of tasks pop (queueId -1, 32 a pop, invisible 60 s) another
   group's copy of the same messages, each message acked with its own ACK_MESSAGE (as the
   5.x clients ack), the acks of one answer in flight together; msg/s until all are acked.
4. POP + BATCH_ACK: the same, one BATCH_ACK_MESSAGE per answer. 3 and 4 run again with
   ``--pop-workers`` tasks: POP consumers share queues, so more of them may pop at once
   (pull is bound to one puller per queue).
5. clients: our PushConsumer (from the first offset, a listener per message) and our
   SimpleConsumer (``--workers`` tasks, receive 32 and ack each on its own) consume the same
   messages in their own groups: the ratio between real consumers, not only the protocol.
6. latency: a producer sends ``--rate`` msg/s for ``--seconds`` s while POP consumers
   long-poll (pollTime 1 s); per message: send -> received (end to end) and received -> ack
   answered; p50 / p99.

Prints one table and, with ``--json``, writes the numbers. The machine may be shared: the
absolute numbers move with its load, the ratio less so.

    .venv/bin/python benchmarks/pop_bench.py [--messages N] [--workers W] [--pop-workers P]
        [--rate R] [--seconds S] [--no-clients] [--dir PATH] [--json PATH]

The table also gives each phase's CPU microseconds per message in the broker process and in
this one (which side bounds it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Sequence
from pathlib import Path

from orbitmq.client import PushConsumer, PushConsumerConfig, SimpleConsumer, SimpleConsumerConfig
from orbitmq.common import MessageExt, decode_messages, message_properties_to_string
from orbitmq.common import message_const as mc
from orbitmq.protocol import ConsumeFromWhere, RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import BatchAck, BatchAckMessageRequestBody
from orbitmq.protocol.header import (
    AckMessageRequestHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    PullMessageRequestHeader,
    SendMessageRequestHeader,
)
from orbitmq.protocol.pop_extra_info import (
    ExtraInfo,
    parse_start_offset_info,
    queue_key,
)
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION, FLAG_SUSPEND
from orbitmq.remoting import RemotingClient

TOPIC = "PopBench"
QUEUES = 4
BODY = b"x" * 1024
READY = re.compile(r"OrbitMQ ready: name server (\S+), broker (\S+)")
CONF = "mappedFileSizeCommitLog=268435456\nmaxHashSlotNum=50000\nmaxIndexNum=200000\n"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def send_request(i: int, topic: str = TOPIC) -> RemotingCommand:
    header = SendMessageRequestHeader(
        producer_group="pop-bench",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=QUEUES,
        queue_id=i % QUEUES,
        sys_flag=0,
        born_timestamp=now_ms(),
        flag=0,
        properties=message_properties_to_string({mc.PROPERTY_KEYS: str(i)}),
    )
    return RemotingCommand.create_request(
        RequestCode.SEND_MESSAGE_V2, header.to_v2().to_ext_fields(), BODY
    )


async def send_all(client: RemotingClient, broker: str, count: int) -> None:
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)

    async def sender() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            response = await client.invoke(broker, send_request(i), 10.0)
            assert response.code == ResponseCode.SUCCESS, response.remark

    await asyncio.gather(*(sender() for _ in range(64)))


async def pull_all(client: RemotingClient, broker: str, count: int, workers: int) -> float:
    """Seconds to pull ``count`` messages with ``workers`` tasks over the queues."""
    got = 0
    offsets = dict.fromkeys(range(QUEUES), 0)
    done = asyncio.Event()

    async def worker(queue_id: int) -> None:
        nonlocal got
        while not done.is_set():
            header = PullMessageRequestHeader(
                consumer_group="bench-pull",
                topic=TOPIC,
                queue_id=queue_id,
                queue_offset=offsets[queue_id],
                max_msg_nums=32,
                sys_flag=FLAG_SUBSCRIPTION | FLAG_SUSPEND,
                commit_offset=0,
                suspend_timeout_millis=1000,
                subscription="*",
                sub_version=0,
                expression_type="TAG",
            )
            request = RemotingCommand.create_request(
                RequestCode.PULL_MESSAGE, header.to_ext_fields()
            )
            response = await client.invoke(broker, request, 10.0)
            if response.code == ResponseCode.SUCCESS:
                got += len(decode_messages(response.body))
                offsets[queue_id] = int(response.ext_fields["nextBeginOffset"])
            if got >= count and not done.is_set():
                done.set()
                finished.append(time.perf_counter())

    finished: list[float] = []
    began = time.perf_counter()
    # One puller per queue at a time, as a push consumer pulls a queue (in order). The span
    # ends with the last message; the other pullers' last long polls are not counted.
    await asyncio.gather(*(worker(q % QUEUES) for q in range(min(workers, QUEUES))))
    return finished[0] - began


def pop_request(group: str, poll_ms: int, topic: str = TOPIC) -> RemotingCommand:
    header = PopMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=-1,
        max_msg_nums=32,
        invisible_time=60_000,
        poll_time=poll_ms,
        born_time=now_ms(),
        init_mode=0,
    )
    return RemotingCommand.create_request(RequestCode.POP_MESSAGE, header.to_ext_fields())


def popped(response: RemotingCommand, broker_name: str) -> list[tuple[int, int, ExtraInfo]]:
    """(queue id, queue offset, extra info) of each message of a POP answer."""
    header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
    starts = parse_start_offset_info(header.start_offset_info)
    result = []
    for message in decode_messages(response.body):
        extra = ExtraInfo.build(
            ck_queue_offset=starts[queue_key(message.topic, message.queue_id)],
            pop_time=header.pop_time,
            invisible_time=header.invisible_time,
            revive_qid=header.revive_qid,
            topic=message.topic,
            broker_name=broker_name,
            queue_id=message.queue_id,
            queue_offset=message.queue_offset,
        )
        result.append((message.queue_id, message.queue_offset, extra))
    return result


async def ack_each(
    client: RemotingClient,
    broker: str,
    group: str,
    items: list[tuple[int, int, ExtraInfo]],
    topic: str = TOPIC,
) -> None:
    async def one(queue_id: int, offset: int, extra: ExtraInfo) -> None:
        header = AckMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            extra_info=str(extra),
            offset=offset,
        )
        request = RemotingCommand.create_request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
        response = await client.invoke(broker, request, 10.0)
        assert response.code == ResponseCode.SUCCESS, response.remark

    await asyncio.gather(*(one(*item) for item in items))


async def ack_batch(
    client: RemotingClient, broker: str, group: str, items: list[tuple[int, int, ExtraInfo]]
) -> None:
    by_queue: dict[int, list[tuple[int, ExtraInfo]]] = {}
    for queue_id, offset, extra in items:
        by_queue.setdefault(queue_id, []).append((offset, extra))
    acks = []
    for queue_id, entries in by_queue.items():
        extra = entries[0][1]
        ack = BatchAck(
            consumer_group=group,
            topic=TOPIC,
            retry=extra.retry,
            start_offset=extra.ck_queue_offset,
            queue_id=queue_id,
            revive_queue_id=extra.revive_qid,
            pop_time=extra.pop_time,
            invisible_time=extra.invisible_time,
        )
        ack.set_offsets(offset for offset, _ in entries)
        acks.append(ack)
    body = BatchAckMessageRequestBody(broker_name=items[0][2].broker_name, acks=acks).to_json()
    request = RemotingCommand.create_request(RequestCode.BATCH_ACK_MESSAGE, {}, body)
    response = await client.invoke(broker, request, 10.0)
    assert response.code == ResponseCode.SUCCESS, response.remark


async def pop_all(
    client: RemotingClient, broker: str, group: str, count: int, workers: int, batch: bool
) -> float:
    """Seconds to pop and ack ``count`` messages with ``workers`` tasks."""
    acked = 0
    done = asyncio.Event()

    async def worker() -> None:
        nonlocal acked
        while not done.is_set():
            response = await client.invoke(broker, pop_request(group, 1000), 10.0)
            if response.code != ResponseCode.SUCCESS:
                continue
            items = popped(response, "broker-a")
            await (ack_batch if batch else ack_each)(client, broker, group, items)
            acked += len(items)
            if acked >= count and not done.is_set():
                done.set()
                finished.append(time.perf_counter())

    finished: list[float] = []
    began = time.perf_counter()
    # The span ends with the last ack; the other workers' last long polls are not counted.
    await asyncio.gather(*(worker() for _ in range(workers)))
    return finished[0] - began


async def latency(
    client: RemotingClient, broker: str, rate: int, seconds: int, workers: int
) -> dict[str, float]:
    """Send ``rate`` msg/s while POP consumers long-poll and ack: end to end and
    received -> ack answered, in ms."""
    group, topic = "bench-latency", TOPIC + "Latency"
    # A topic of its own, created before the consumers start.
    response = await client.invoke(broker, send_request(-1, topic), 10.0)
    assert response.code == ResponseCode.SUCCESS, response.remark
    await client.invoke(broker, pop_request(group, 0, topic), 10.0)
    end_to_end: list[float] = []
    receive_to_ack: list[float] = []
    total = rate * seconds
    stop = asyncio.Event()

    async def consumer() -> None:
        while not stop.is_set():
            response = await client.invoke(broker, pop_request(group, 1000, topic), 10.0)
            received = now_ms()
            if response.code != ResponseCode.SUCCESS:
                continue
            for message in decode_messages(response.body):
                end_to_end.append(received - message.born_timestamp)
            items = popped(response, "broker-a")
            began = time.perf_counter()
            await ack_each(client, broker, group, items, topic)
            elapsed = (time.perf_counter() - began) * 1000
            receive_to_ack.extend([elapsed] * len(items))
            if len(receive_to_ack) >= total:
                stop.set()

    sends: list[asyncio.Task[RemotingCommand]] = []

    async def producer() -> None:
        began = time.perf_counter()
        for i in range(total):
            delay = began + i / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            request = send_request(i, topic)
            sends.append(asyncio.create_task(client.invoke(broker, request, 10.0)))

    consumers = [asyncio.create_task(consumer()) for _ in range(workers)]
    await producer()
    await asyncio.gather(*sends)
    await asyncio.wait_for(stop.wait(), seconds + 30)
    # Each consumer ends after its current long poll (at most 1 s).
    await asyncio.gather(*consumers)
    return {
        "rate": rate,
        "e2e_p50_ms": statistics.median(end_to_end),
        "e2e_p99_ms": statistics.quantiles(end_to_end, n=100)[98],
        "receive_to_ack_p50_ms": statistics.median(receive_to_ack),
        "receive_to_ack_p99_ms": statistics.quantiles(receive_to_ack, n=100)[98],
    }


async def push_consume(namesrv: str, count: int) -> float:
    """Seconds for our PushConsumer (concurrent, a listener per message, 20 consume tasks)
    to be handed ``count`` messages of the topic, from its first offset."""
    got = 0
    done = asyncio.Event()

    async def listener(msgs: Sequence[MessageExt], context: object) -> None:
        nonlocal got
        got += len(msgs)
        if got >= count:
            done.set()

    config = PushConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)
    consumer = PushConsumer("bench-push", namesrv_addr=namesrv, config=config)
    consumer.subscribe(TOPIC)
    consumer.register_listener(listener)
    began = time.perf_counter()
    await consumer.start()
    try:
        await asyncio.wait_for(done.wait(), 120)
        return time.perf_counter() - began
    finally:
        await consumer.shutdown()


async def simple_consume(namesrv: str, count: int, workers: int) -> float:
    """Seconds for our SimpleConsumer to receive (32 at a time, ``workers`` tasks) and ack,
    each message on its own as the 5.x clients do, ``count`` messages of the topic."""
    acked = 0
    done = asyncio.Event()
    consumer = SimpleConsumer(
        "bench-simple", namesrv_addr=namesrv, config=SimpleConsumerConfig(await_duration_s=1.0)
    )

    async def worker() -> None:
        nonlocal acked
        while not done.is_set():
            views = await consumer.receive(32, 60)
            await asyncio.gather(*(consumer.ack(view) for view in views))
            acked += len(views)
            if acked >= count:
                done.set()

    began = time.perf_counter()
    await consumer.start()
    try:
        await consumer.subscribe(TOPIC)
        await asyncio.gather(*(worker() for _ in range(workers)))
        return time.perf_counter() - began
    finally:
        await consumer.shutdown()


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (from /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds per message of the broker process and of this (client) process over one
    phase, to tell which side bounds it."""

    def __init__(self, broker_pid: int) -> None:
        self.broker_pid = broker_pid
        self.results: dict[str, float] = {}

    async def measure(self, name: str, count: int, phase: Awaitable[float]) -> float:
        broker, client = cpu_s(self.broker_pid), time.process_time()
        seconds = await phase
        self.results[f"{name}_broker_cpu_us_per_msg"] = (
            (cpu_s(self.broker_pid) - broker) / count * 1e6
        )
        self.results[f"{name}_client_cpu_us_per_msg"] = (time.process_time() - client) / count * 1e6
        return seconds


async def run(
    broker: str, namesrv: str, broker_pid: int, args: argparse.Namespace
) -> dict[str, float]:
    client = RemotingClient(connect_timeout_s=5.0)
    cpu = CpuMeter(broker_pid)
    n, w = args.messages, args.workers
    try:
        began = time.perf_counter()
        await send_all(client, broker, n)
        send_s = time.perf_counter() - began
        pull_s = await cpu.measure("pull", n, pull_all(client, broker, n, w))
        pop_s = await cpu.measure("pop_ack", n, pop_all(client, broker, "bench-pop", n, w, False))
        batch_s = await cpu.measure(
            "pop_batch_ack", n, pop_all(client, broker, "bench-bpop", n, w, True)
        )
        results = {
            "messages": n,
            "workers": w,
            "send_msg_per_s": n / send_s,
            "pull_msg_per_s": n / pull_s,
            "pop_ack_msg_per_s": n / pop_s,
            "pop_batch_ack_msg_per_s": n / batch_s,
        }
        if args.pop_workers != w:
            many = args.pop_workers
            results["pop_workers"] = many
            results["pop_ack_many_msg_per_s"] = n / await cpu.measure(
                "pop_ack_many", n, pop_all(client, broker, "bench-pop-many", n, many, False)
            )
            results["pop_batch_ack_many_msg_per_s"] = n / await cpu.measure(
                "pop_batch_ack_many", n, pop_all(client, broker, "bench-bpop-many", n, many, True)
            )
        for key in [k for k in results if k.startswith("pop_") and k.endswith("_msg_per_s")]:
            results[key.removesuffix("_msg_per_s") + "_vs_pull"] = (
                results[key] / results["pull_msg_per_s"]
            )
        if args.clients:
            push_s = await cpu.measure("push_consumer", n, push_consume(namesrv, n))
            simple_s = await cpu.measure("simple_consumer", n, simple_consume(namesrv, n, w))
            results["push_consumer_msg_per_s"] = n / push_s
            results["simple_consumer_msg_per_s"] = n / simple_s
            results["simple_vs_push_consumer"] = push_s / simple_s
        results |= cpu.results
        if args.rate and args.seconds:
            results |= await latency(client, broker, args.rate, args.seconds, args.workers)
        return results
    finally:
        await client.close()


def start_broker(root: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    """The ``orbitmq start`` process, its broker's and its name server's addresses."""
    conf = root / "broker.conf"
    conf.write_text(CONF)
    out = (root / "out").open("w+")
    process = subprocess.Popen(
        [sys.executable, "-m", "orbitmq.cli", "start", "-c", str(conf), "--data-dir",
         str(root / "data"), "--namesrv-port", "0", "--listen-port", "0", "--console-port", "-1"],
        stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    for _ in range(400):
        out.seek(0)
        match = next(filter(None, map(READY.search, out.read().splitlines())), None)
        if match:
            return process, match.group(2), match.group(1)
        time.sleep(0.05)
    process.kill()
    out.seek(0)
    raise SystemExit(f"the broker did not start: {out.read()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--workers", type=int, default=4, help="pullers (one per queue), poppers")
    parser.add_argument(
        "--pop-workers", type=int, default=16, help="POP again with this many (POP shares queues)"
    )
    parser.add_argument("--rate", type=int, default=2000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument(
        "--clients",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time our PushConsumer against our SimpleConsumer (receive + ack each)",
    )
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="pop-bench-", dir=args.dir))
    process, broker, namesrv = start_broker(root)
    try:
        results = asyncio.run(run(broker, namesrv, process.pid, args))
    except BaseException:
        print((root / "out").read_text()[-3000:], file=sys.stderr)
        raise
    finally:
        process.terminate()
        process.wait(60)
        shutil.rmtree(root, ignore_errors=True)
    print(f"{'measure':<28} value")
    for key, value in results.items():
        print(f"{key:<28} {value:,.3f}" if isinstance(value, float) else f"{key:<28} {value:,}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
