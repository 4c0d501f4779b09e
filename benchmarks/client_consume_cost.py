"""CPU cost per message of the push consumer's consume path, without a broker.

One pull answer of 500 records of 1 KiB (properties as a RocketMQ producer sets them:
UNIQ_KEY, WAIT, TAGS, KEYS) is encoded once as a response frame. Each round then runs what
the client does with it: the frame decoder (read into 256 KiB at a time, as uvloop reads a
socket), ``MQClientAPI.pull_message`` (decode, tag re-check, MIN/MAX_OFFSET), the process
queue put, the concurrent consume service (retry topic, consume start, hooks, an ``async``
listener reading every body, process queue removal and the offset update) and the
messages' teardown. Times are CPU seconds of this process (``time.process_time``); the table
gives the median over the rounds, per message and stage.

    .venv/bin/python benchmarks/client_consume_cost.py [--rounds N] [--batch B] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from orbitmq.client import PushConsumer
from orbitmq.client.broker_offsets import offset_store_for
from orbitmq.client.consume_service import ConcurrentConsumeService
from orbitmq.client.consumer_config import ConsumeContext, PushConsumerConfig
from orbitmq.client.mq_client_api import MQClientAPI
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.common import MessageExt, MessageQueue, UniqueIdGenerator, encode_message
from orbitmq.filter import build_subscription_data
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.frame_decoder import FrameDecoder
from orbitmq.protocol.header import PullMessageRequestHeader, PullMessageResponseHeader

TOPIC = "BenchTopic"
BODY = b"x" * 1024
STAGES = ("frame decode", "pull answer", "queue put", "consume", "teardown", "total")


def pull_answer_body(count: int) -> bytes:
    """``count`` stored records back to back, as the broker answers a pull."""
    ids = UniqueIdGenerator()
    return b"".join(
        encode_message(
            MessageExt(
                topic=TOPIC,
                body=BODY,
                properties={
                    "KEYS": f"key{offset}",
                    "TAGS": "TagA",
                    "UNIQ_KEY": ids.create(),
                    "WAIT": "true",
                },
                queue_id=1,
                queue_offset=offset,
                commit_log_offset=offset * 1200,
                born_timestamp=1_700_000_000_000 + offset,
                born_host=("10.0.0.2", 52000),
                store_timestamp=1_700_000_000_001 + offset,
                store_host=("10.0.0.1", 10911),
            )
        )
        for offset in range(count)
    )


#: What uvloop asks for at most per socket read.
READ_CHUNK = 256 * 1024


class FramedRemoting:
    """Answers every pull with one canned frame, read into a real FrameDecoder's offered
    buffer (``get_buffer`` / ``buffer_updated``, as the Channel's BufferedProtocol does) in
    reads of at most ``READ_CHUNK``; the copy stands in for the socket read."""

    def __init__(self, frame: bytes) -> None:
        self.frame = memoryview(frame)
        self.decoder = FrameDecoder()
        self.seconds = 0.0

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout_s: float
    ) -> RemotingCommand:
        del addr, request, timeout_s
        started = time.process_time()
        commands: list[RemotingCommand] = []
        frame, position = self.frame, 0
        while position < len(frame):
            view = self.decoder.get_buffer(READ_CHUNK)
            count = min(len(view), READ_CHUNK, len(frame) - position)
            view[:count] = frame[position : position + count]
            view.release()
            position += count
            commands += self.decoder.buffer_updated(count)
        self.seconds += time.process_time() - started
        (response,) = commands
        return response


async def _listener(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
    del context
    for m in messages:
        m.body  # noqa: B018 -- the benchmark's listener reads every body, nothing else


async def measure(rounds: int, batch: int) -> dict[str, list[float]]:
    """Per round and stage, microseconds of CPU per message."""
    header = PullMessageResponseHeader(
        suggest_which_broker_id=0, next_begin_offset=batch, min_offset=0, max_offset=batch
    )
    response = RemotingCommand(
        code=ResponseCode.SUCCESS, ext_fields=header.to_ext_fields(), body=pull_answer_body(batch)
    )
    remoting = FramedRemoting(response.encode())
    api = MQClientAPI(remoting)  # type: ignore[arg-type]
    consumer = PushConsumer(
        "BenchGroup",
        config=PushConsumerConfig(consume_message_batch_max_size=batch, pull_batch_size=batch),
    )
    consumer.offset_store = offset_store_for(consumer.config, consumer.instance, consumer.group)
    service = ConcurrentConsumeService(consumer, _listener)
    mq = MessageQueue(TOPIC, "broker-a", 1)
    subscription = build_subscription_data(TOPIC, "*")
    request = PullMessageRequestHeader(
        consumer_group="BenchGroup",
        topic=TOPIC,
        queue_id=1,
        queue_offset=0,
        max_msg_nums=batch,
        sys_flag=0,
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription="*",
        sub_version=0,
    )
    runs: dict[str, list[float]] = {stage: [] for stage in STAGES}
    clock = time.process_time
    for _ in range(rounds):
        pq = ProcessQueue()
        remoting.seconds = 0.0
        t0 = clock()
        result = await api.pull_message("broker", request, subscription, 30.0)
        t1 = clock()
        pq.put_messages(result.messages)
        t2 = clock()
        service.submit(result.messages, pq, mq)
        await asyncio.gather(*service._tasks)  # the consume tasks finish
        t3 = clock()
        del result
        t4 = clock()
        assert pq.msg_count == 0
        seconds = {
            "frame decode": remoting.seconds,
            "pull answer": t1 - t0 - remoting.seconds,
            "queue put": t2 - t1,
            "consume": t3 - t2,
            "teardown": t4 - t3,
            "total": t4 - t0,
        }
        for stage, value in seconds.items():
            runs[stage].append(value / batch * 1e6)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=400)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    runs = asyncio.run(measure(args.rounds, args.batch))
    table = Table(
        title=f"Client CPU µs per 1 KiB message ({args.batch}-message pulls, {args.rounds} rounds)"
    )
    for column in ("stage", "median", "min", "max"):
        table.add_column(column, justify="right")
    summary = {}
    for stage, values in runs.items():
        median = statistics.median(values)
        summary[stage] = {"median_us": median, "min_us": min(values)}
        table.add_row(stage, f"{median:.2f}", f"{min(values):.2f}", f"{max(values):.2f}")
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
