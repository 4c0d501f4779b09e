"""A ``PushConsumer`` whose listener fails the first delivery of one message, or every
delivery of it when FAIL_BODY is prefixed with ``always:``.

The Python wrapper ignores the listener's return value: a listener fails by raising, which the
wrapper turns into RECONSUME_LATER (and ctypes reports the exception on stderr).

Run with a compat virtualenv's Python:
``python cpp_failing_consumer.py NAMESRV TOPIC GROUP COUNT FAIL_BODY TIMEOUT_S``.
Prints each delivery as JSON (with ``"failed": true`` for the one it refused). Exit status 0
once COUNT distinct messages were accepted, the failed one among them (never with ``always:``:
run it in the background and stop it); 3 on timeout. Ends with
``os._exit``: ``PushConsumer.shutdown()`` segfaults inside the client library.
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
    count, fail_body, timeout_s = int(sys.argv[4]), sys.argv[5], float(sys.argv[6])
    always = fail_body.startswith("always:")
    fail_body = fail_body.removeprefix("always:")
    accepted: set[str] = set()
    failed: list[str] = []
    lock = threading.Lock()
    done = threading.Event()

    def on_message(message: RecvMessage) -> None:
        line = {
            "topic": text(message.topic),
            "body": text(message.body),
            "tags": text(message.tags),
            "keys": text(message.keys),
            "msg_id": text(message.id),
            "reconsume_times": message.reconsume_times,
            "received_ms": int(time.time() * 1000),
            "failed": False,
        }
        with lock:
            if line["body"] == fail_body and (always or not failed):
                failed.append(line["msg_id"])
                line["failed"] = True
                print(json.dumps(line), flush=True)
                raise RuntimeError(f"refusing {line['body']}")
            print(json.dumps(line), flush=True)
            accepted.add(line["body"])
            if len(accepted) >= count and fail_body in accepted:
                done.set()

    consumer = PushConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.subscribe(topic, on_message)
    consumer.start()
    ok = done.wait(timeout_s)
    sys.stdout.flush()
    os._exit(0 if ok else 3)


if __name__ == "__main__":
    main()
