"""The official RocketMQ 5 Python client as a benchmark driver: THREADS threads share one
``Producer`` and send SIZE-byte messages synchronously for WARM_UP_S + SECONDS; only sends
begun after the warm-up count.

Run with the rocketmq-python-client virtualenv's Python:
``python python5_send_loop.py ENDPOINT TOPIC THREADS SIZE WARM_UP_S SECONDS``.
Prints one JSON line: messages, msg_per_s, p50_ms, p99_ms.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from rocketmq import ClientConfiguration, Credentials, Message, Producer


def main() -> None:
    endpoint, topic = sys.argv[1], sys.argv[2]
    threads, size = int(sys.argv[3]), int(sys.argv[4])
    warm_up_s, seconds = float(sys.argv[5]), float(sys.argv[6])
    producer = Producer(ClientConfiguration(endpoint, Credentials()), (topic,))
    producer.startup()
    body = b"x" * size
    start = time.monotonic()
    measure_from, stop_at = start + warm_up_s, start + warm_up_s + seconds
    latencies: list[float] = []
    lock = threading.Lock()

    def loop() -> None:
        while True:
            began = time.monotonic()
            if began >= stop_at:
                return
            message = Message()
            message.topic = topic
            message.body = body
            message.tag = "bench"
            producer.send(message)
            if began >= measure_from:
                with lock:
                    latencies.append(time.monotonic() - began)

    workers = [threading.Thread(target=loop) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    producer.shutdown()
    latencies.sort()

    def at(fraction: float) -> float:
        return latencies[min(len(latencies) - 1, int(len(latencies) * fraction))] * 1000

    print(
        json.dumps(
            {
                "messages": len(latencies),
                "msg_per_s": len(latencies) / seconds,
                "p50_ms": at(0.5),
                "p99_ms": at(0.99),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
