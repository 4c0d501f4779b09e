"""Send messages with the C++ client's ``Producer.send_sync``; print one JSON line per result.

Run with a compat virtualenv's Python: ``python cpp_producer.py NAMESRV TOPIC GROUP COUNT``.
Message i has body ``body-i``, tag ``tag-{i % 2}`` and keys ``key-i``.
"""

from __future__ import annotations

import json
import os
import sys

from rocketmq.client import Message, Producer


def main() -> None:
    namesrv, topic, group, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    producer = Producer(group, timeout=5000)
    producer.set_namesrv_addr(namesrv)
    producer.start()
    for i in range(count):
        message = Message(topic)
        message.set_body(f"body-{i}")
        message.set_tags(f"tag-{i % 2}")
        message.set_keys(f"key-{i}")
        result = producer.send_sync(message)
        line = {"status": result.status.name, "msg_id": result.msg_id, "offset": result.offset}
        print(json.dumps(line), flush=True)
    producer.shutdown()
    # The client library's destructors are not to be trusted at interpreter exit.
    os._exit(0)


if __name__ == "__main__":
    main()
