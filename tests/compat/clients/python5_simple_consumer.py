"""The official RocketMQ 5 Python client's ``SimpleConsumer`` (gRPC, POP), unchanged: receives
until COUNT distinct messages were acked. The first message it sees it does not ack at
once: it changes its invisible duration to 1 s and lets it come back (a second delivery
attempt), then acks it.

Run with the rocketmq-python-client virtualenv's Python:
``python python5_simple_consumer.py ENDPOINT TOPIC GROUP COUNT TIMEOUT_S``.
Prints each delivery as JSON (body, tag, keys, seq, message id, delivery attempt, and
whether it was acked). Exit 0 once COUNT were acked, 3 on timeout.
"""

from __future__ import annotations

import json
import sys
import time

from rocketmq import ClientConfiguration, Credentials, FilterExpression, SimpleConsumer


def main() -> None:
    endpoint, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    count, timeout_s = int(sys.argv[4]), float(sys.argv[5])
    consumer = SimpleConsumer(
        ClientConfiguration(endpoint, Credentials()),
        group,
        {topic: FilterExpression()},
        await_duration=5,
    )
    consumer.startup()
    acked: set[str] = set()
    held: str | None = None
    deadline = time.monotonic() + timeout_s
    try:
        while len(acked) < count:
            if time.monotonic() > deadline:
                sys.exit(3)
            for message in consumer.receive(16, 15):
                line = {
                    "body": message.body.decode(),
                    "tag": message.tag or "",
                    "keys": " ".join(sorted(message.keys)),
                    "seq": (message.properties or {}).get("seq", ""),
                    "message_id": message.message_id,
                    "attempt": message.delivery_attempt,
                    "acked": False,
                }
                if held is None:
                    held = message.message_id
                    consumer.change_invisible_duration(message, 1)
                else:
                    consumer.ack(message)
                    acked.add(message.message_id)
                    line["acked"] = True
                print(json.dumps(line), flush=True)
    finally:
        consumer.shutdown()


if __name__ == "__main__":
    main()
