"""Send messages with the official ``rocketmq-python-client`` (5.x, gRPC) Producer; print one
JSON line per message: sent, or the exception that refused it.

Run with a compat virtualenv's Python:
``python python5_acl_producer.py ENDPOINT TOPIC COUNT [ACCESS_KEY SECRET_KEY]``.

Message ``i``: body ``body-i``, tag ``tag-{i % 2}``, keys ``key-i``, user property
``seq=i``. Lines: ``{"sent": i, "message_id"}`` or ``{"failed": i, "error": TEXT}``; a
producer whose start-up is refused prints ``{"startup_failed": TEXT}`` and exits 0.
"""

from __future__ import annotations

import json
import sys

from rocketmq import ClientConfiguration, Credentials, Message, Producer


def emit(**fields: object) -> None:
    print(json.dumps(fields), flush=True)


def main() -> None:
    endpoint, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    credentials = Credentials(sys.argv[4], sys.argv[5]) if len(sys.argv) > 5 else Credentials()
    producer = Producer(ClientConfiguration(endpoint, credentials), (topic,))
    try:
        producer.startup()
    except Exception as exc:  # the refusal is what the test looks at
        emit(startup_failed=str(exc))
        return
    try:
        for i in range(count):
            message = Message()
            message.topic = topic
            message.body = f"body-{i}".encode()
            message.tag = f"tag-{i % 2}"
            message.keys = f"key-{i}"
            message.add_property("seq", str(i))
            try:
                receipt = producer.send(message)
            except Exception as exc:
                emit(failed=i, error=str(exc))
            else:
                emit(sent=i, message_id=receipt.message_id)
    finally:
        producer.shutdown()


if __name__ == "__main__":
    main()
