"""Consume with the C++ client's ``PushConsumer``; print each message as JSON.

Run with a compat virtualenv's Python:
``python cpp_push_consumer.py NAMESRV TOPIC GROUP COUNT TIMEOUT_S [MODEL [PREFIX]]``.

MODEL is ``clustering`` (default), ``broadcasting`` or ``orderly`` (clustering with the
orderly listener, which locks its queues at the broker). Only messages whose body starts with
PREFIX (default ``body-``) count towards COUNT; others are printed too.

Exits with ``os._exit``: ``PushConsumer.shutdown()`` segfaults inside the client library.
Exit status 0 once COUNT distinct counted messages arrived, 3 on timeout.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from rocketmq.client import MessageModel, PushConsumer, RecvMessage


def text(value: str | bytes | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def main() -> None:
    namesrv, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    count, timeout_s = int(sys.argv[4]), float(sys.argv[5])
    model = sys.argv[6] if len(sys.argv) > 6 else "clustering"
    prefix = sys.argv[7] if len(sys.argv) > 7 else "body-"
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
            "born_timestamp": message.born_timestamp,
            "store_timestamp": message.store_timestamp,
            "seq": text(message.get_property("seq")),
            "delay": text(message.get_property("DELAY")),
            "received_ms": int(time.time() * 1000),
            "thread": threading.get_ident(),
        }
        with lock:
            print(json.dumps(line), flush=True)
            if str(line["body"]).startswith(prefix):
                received.add(str(line["msg_id"]))
            if len(received) >= count:
                done.set()

    if model == "broadcasting":
        consumer = PushConsumer(group, message_model=MessageModel.BROADCASTING)
    else:
        consumer = PushConsumer(group, orderly=model == "orderly")
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message)
    consumer.start()
    ok = done.wait(timeout_s)
    sys.stdout.flush()
    os._exit(0 if ok else 3)


if __name__ == "__main__":
    main()
