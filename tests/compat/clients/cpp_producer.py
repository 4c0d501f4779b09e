"""Send messages with the C++ client's ``Producer``; print one JSON line per result.

Run with a compat virtualenv's Python:
``python cpp_producer.py NAMESRV TOPIC GROUP COUNT [MODE]``.

Message i has body ``body-i``, tag ``tag-{i % 2}``, keys ``key-i`` and the user property
``seq=i``. MODE is how they are sent:

- ``sync`` (default): ``send_sync``, one line ``{status, msg_id, offset}`` per message.
- ``async``: ``send_async``, all in flight at once; one line per callback, with ``i``.
- ``oneway``: ``send_oneway``; no results, so one line ``{"sent": COUNT}`` at the end.
- ``batch``: ``send_batch`` in batches of ``BATCH``; one line per batch, with its ``first``.
- ``orderly``: ``send_orderly`` with the order key ``i % ORDER_KEYS`` as argument (the
  wrapper's selector takes queue ``arg % queue count``); one line per message.
- ``delay``: ``send_sync`` with delay level 1 (1 s); one line per message.

With ``COMPAT_ACCESS_KEY`` and ``COMPAT_SECRET_KEY`` in the environment the producer signs
its requests (``set_session_credentials``), for a broker with aclEnable=true.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from typing import Any

from rocketmq.client import Message, Producer

BATCH = 4
ORDER_KEYS = 3
ASYNC_TIMEOUT_S = 30.0
#: Async callbacks run on the client's threads: one line at a time.
PRINT_LOCK = threading.Lock()


def message(topic: str, i: int) -> Message:
    msg = Message(topic)
    msg.set_body(f"body-{i}")
    msg.set_tags(f"tag-{i % 2}")
    msg.set_keys(f"key-{i}")
    msg.set_property("seq", str(i))
    return msg


def line(result: Any, **extra: object) -> None:
    fields = {"status": result.status.name, "msg_id": result.msg_id, "offset": result.offset}
    with PRINT_LOCK:
        print(json.dumps({**fields, **extra}), flush=True)


def send_async(producer: Producer, topic: str, count: int) -> None:
    lock = threading.Lock()
    done = threading.Event()
    answered = [0]

    def answer() -> None:
        with lock:
            answered[0] += 1
            if answered[0] == count:
                done.set()

    def on_success(i: int) -> Any:
        def callback(result: Any) -> None:
            line(result, i=i)
            answer()

        return callback

    def on_error(i: int) -> Any:
        def callback(exc: Exception) -> None:
            with PRINT_LOCK:
                print(json.dumps({"i": i, "error": str(exc)}), flush=True)
            answer()

        return callback

    # Each Message must outlive its send: the wrapper frees the C message in __del__.
    messages = [message(topic, i) for i in range(count)]
    for i, msg in enumerate(messages):
        producer.send_async(msg, on_success(i), on_error(i))
    if not done.wait(ASYNC_TIMEOUT_S):
        print(json.dumps({"error": f"{count - answered[0]} callbacks missing"}), flush=True)


def main() -> None:
    namesrv, topic, group, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    mode = sys.argv[5] if len(sys.argv) > 5 else "sync"
    producer = Producer(group, timeout=5000)
    producer.set_namesrv_addr(namesrv)
    if os.environ.get("COMPAT_ACCESS_KEY"):
        producer.set_session_credentials(
            os.environ["COMPAT_ACCESS_KEY"], os.environ["COMPAT_SECRET_KEY"], "ALIYUN"
        )
    producer.start()
    if mode == "async":
        send_async(producer, topic, count)
    elif mode == "oneway":
        for i in range(count):
            producer.send_oneway(message(topic, i))
        print(json.dumps({"sent": count}), flush=True)
    elif mode == "batch":
        for first in range(0, count, BATCH):
            batch = [message(topic, i) for i in range(first, min(first + BATCH, count))]
            line(producer.send_batch(batch), first=first)
    elif mode == "orderly":
        for i in range(count):
            line(producer.send_orderly(message(topic, i), i % ORDER_KEYS))
    elif mode in ("sync", "delay"):
        for i in range(count):
            msg = message(topic, i)
            if mode == "delay":
                msg.set_delay_time_level(1)
            line(producer.send_sync(msg))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    producer.shutdown()
    # The client library's destructors are not to be trusted at interpreter exit.
    os._exit(0)


if __name__ == "__main__":
    main()
