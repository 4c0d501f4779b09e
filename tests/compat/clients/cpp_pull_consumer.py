"""Read a topic with the C++ client's ``PullConsumer``; print each message as JSON.

Run with a compat virtualenv's Python:
``python cpp_pull_consumer.py NAMESRV TOPIC GROUP EXPRESSION``.

The wrapper's ``pull`` walks every queue of the topic from offset 0 until the broker answers
NO_NEW_MSG, so one pass returns everything stored that matches EXPRESSION. Ends with
``os._exit``: the client library's destructors are not to be trusted at interpreter exit.
"""

from __future__ import annotations

import json
import os
import sys

from rocketmq.client import PullConsumer


def text(value: str | bytes | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def main() -> None:
    namesrv, topic, group, expression = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
    consumer = PullConsumer(group)
    consumer.set_namesrv_addr(namesrv)
    consumer.start()
    for message in consumer.pull(topic, expression):
        line = {
            "topic": text(message.topic),
            "body": text(message.body),
            "tags": text(message.tags),
            "keys": text(message.keys),
            "msg_id": text(message.id),
            "queue_id": message.queue_id,
            "queue_offset": message.queue_offset,
            "seq": text(message.get_property("seq")),
        }
        print(json.dumps(line), flush=True)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
