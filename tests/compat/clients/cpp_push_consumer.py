"""Consume with the C++ client's ``PushConsumer`` (clustering); print each message as JSON.

Run with a compat virtualenv's Python:
``python cpp_push_consumer.py NAMESRV TOPIC GROUP COUNT TIMEOUT_S``.
Exits with ``os._exit``: ``PushConsumer.shutdown()`` segfaults inside the client library.
Exit status 0 once COUNT messages arrived, 3 on timeout.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from rocketmq.client import PushConsumer, RecvMessage


def text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def main() -> None:
    namesrv, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    count, timeout_s = int(sys.argv[4]), float(sys.argv[5])
    received: set[str] = set()
    lock = threading.Lock()
    done = threading.Event()

    def on_message(message: RecvMessage) -> None:
        line = {
            "topic": text(message.topic),
            "body": text(message.body),
            "tags": text(message.tags),
            "keys": text(message.keys),
            "msg_id": text(message.id),
            "queue_id": message.queue_id,
            "queue_offset": message.queue_offset,
            "reconsume_times": message.reconsume_times,
        }
        with lock:
            print(json.dumps(line), flush=True)
            received.add(line["msg_id"])
            if len(received) >= count:
                done.set()

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message)
    consumer.start()
    deadline = time.monotonic() + timeout_s
    ok = done.wait(max(0.0, deadline - time.monotonic()))
    sys.stdout.flush()
    os._exit(0 if ok else 3)


if __name__ == "__main__":
    main()
