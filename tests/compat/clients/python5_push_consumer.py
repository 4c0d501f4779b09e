"""The official RocketMQ 5 Python client's ``PushConsumer`` (gRPC, POP), unchanged: consumes
until COUNT distinct messages were consumed successfully. It fails the first delivery of
the first message it sees (ConsumeResult.FAILURE), which must come back.

Run with the rocketmq-python-client virtualenv's Python:
``python python5_push_consumer.py ENDPOINT TOPIC GROUP COUNT TIMEOUT_S``.
Prints each delivery as JSON (body, tag, keys, seq, message id, delivery attempt, result).
Exit 0 once COUNT succeeded, 3 on timeout (with ``os._exit``: the listener threads are the
client's).
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
            line = {
                "body": message.body.decode(),
                "tag": message.tag or "",
                "keys": " ".join(sorted(message.keys)),
                "seq": (message.properties or {}).get("seq", ""),
                "message_id": message.message_id,
                "attempt": message.delivery_attempt,
                "result": "FAILURE" if fail else "SUCCESS",
            }
            print(json.dumps(line), flush=True)
            if len(self.succeeded) >= self.count:
                self.done.set()
        return ConsumeResult.FAILURE if fail else ConsumeResult.SUCCESS


def main() -> None:
    endpoint, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    count, timeout_s = int(sys.argv[4]), float(sys.argv[5])
    listener = Listener(count)
    consumer = PushConsumer(
        ClientConfiguration(endpoint, Credentials()),
        group,
        listener,
        {topic: FilterExpression()},
    )
    consumer.startup()
    finished = listener.done.wait(timeout_s)
    time.sleep(0.5)  # let the last acks leave
    os._exit(0 if finished else 3)


if __name__ == "__main__":
    main()
