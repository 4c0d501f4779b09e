"""The official RocketMQ 5 Python client's consumers (gRPC, POP) on a FIFO group
(consumeMessageOrderly=true), unchanged: MODE ``push`` runs a ``PushConsumer`` (its FIFO
consumption: one message of a message group at a time), MODE ``simple`` a
``SimpleConsumer`` that acks each message it receives. Consumes until COUNT distinct
messages were consumed. In ``push`` mode the first delivery of the first message fails
(ConsumeResult.FAILURE): the client retries it locally, and the message group waits.

Run with the rocketmq-python-client virtualenv's Python:
``python python5_fifo_consumer.py ENDPOINT TOPIC GROUP COUNT TIMEOUT_S MODE``.
Prints each delivery as JSON (body, message group, seq, message id, delivery attempt,
result) in the order consumed. Exit 0 once COUNT succeeded, 3 on timeout (``os._exit``:
the listener threads are the client's).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from rocketmq import (
    ClientConfiguration,
    ConsumeResult,
    Credentials,
    FilterExpression,
    MessageListener,
    PushConsumer,
    SimpleConsumer,
)


def line_of(message, result: str) -> str:  # type: ignore[no-untyped-def]
    return json.dumps(
        {
            "body": message.body.decode(),
            "message_group": message.message_group or "",
            "seq": (message.properties or {}).get("seq", ""),
            "message_id": message.message_id,
            "attempt": message.delivery_attempt,
            "result": result,
        }
    )


class Listener(MessageListener):  # type: ignore[misc]
    def __init__(self, count: int) -> None:
        self.count = count
        self.lock = threading.Lock()
        self.succeeded: set[str] = set()
        self.failed: str | None = None
        self.done = threading.Event()

    def consume(self, message):  # type: ignore[no-untyped-def]
        with self.lock:
            fail = self.failed is None
            if fail:
                self.failed = message.message_id
            else:
                self.succeeded.add(message.message_id)
            print(line_of(message, "FAILURE" if fail else "SUCCESS"), flush=True)
            if len(self.succeeded) >= self.count:
                self.done.set()
        return ConsumeResult.FAILURE if fail else ConsumeResult.SUCCESS


def push(endpoint: str, topic: str, group: str, count: int, timeout_s: float) -> bool:
    listener = Listener(count)
    consumer = PushConsumer(
        ClientConfiguration(endpoint, Credentials()), group, listener, {topic: FilterExpression()}
    )
    consumer.startup()
    finished = listener.done.wait(timeout_s)
    time.sleep(0.5)  # let the last acks leave
    return finished


def simple(endpoint: str, topic: str, group: str, count: int, timeout_s: float) -> bool:
    consumer = SimpleConsumer(
        ClientConfiguration(endpoint, Credentials()),
        group,
        {topic: FilterExpression()},
        await_duration=5,
    )
    consumer.startup()
    acked: set[str] = set()
    deadline = time.monotonic() + timeout_s
    while len(acked) < count:
        if time.monotonic() > deadline:
            return False
        for message in consumer.receive(16, 15):
            consumer.ack(message)
            acked.add(message.message_id)
            print(line_of(message, "SUCCESS"), flush=True)
    consumer.shutdown()
    return True


def main() -> None:
    endpoint, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    count, timeout_s, mode = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
    run = push if mode == "push" else simple
    os._exit(0 if run(endpoint, topic, group, count, timeout_s) else 3)


if __name__ == "__main__":
    main()
