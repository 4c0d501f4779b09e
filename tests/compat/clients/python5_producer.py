"""The official RocketMQ 5 Python client's ``Producer`` (gRPC), unchanged, sending COUNT
messages: message ``i`` has body ``body-i``, tag ``tag-{i % 2}``, key ``key-i`` and user
property ``seq=i`` (as ``cpp_producer.py``'s).

Run with the rocketmq-python-client virtualenv's Python:
``python python5_producer.py ENDPOINT TOPIC COUNT MODE [DELAY_S]``; MODE is ``normal``,
``fifo`` (message group ``group-{i % 2}``) or ``delay`` (delivered DELAY_S seconds after
the send: the client 5.1.2 takes the delivery timestamp in whole seconds). Prints each
receipt as JSON (message id, offset, and for delay the delivery time in ms). Exit 0 when
every send was answered.
"""

from __future__ import annotations

import json
import sys
import time

from rocketmq import ClientConfiguration, Credentials, Message, Producer


def main() -> None:
    endpoint, topic, count, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    delay_s = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    producer = Producer(ClientConfiguration(endpoint, Credentials()), (topic,))
    producer.startup()
    try:
        for i in range(count):
            message = Message()
            message.topic = topic
            message.body = f"body-{i}".encode()
            message.tag = f"tag-{i % 2}"
            message.keys = f"key-{i}"
            message.add_property("seq", str(i))
            deliver_s = 0
            if mode == "fifo":
                message.message_group = f"group-{i % 2}"
            elif mode == "delay":
                deliver_s = int(time.time()) + delay_s
                message.delivery_timestamp = deliver_s
            receipt = producer.send(message)
            line = {"i": i, "message_id": receipt.message_id, "offset": receipt.offset}
            if deliver_s:
                line["deliver_ms"] = deliver_s * 1000
            print(json.dumps(line), flush=True)
    finally:
        producer.shutdown()


if __name__ == "__main__":
    main()
