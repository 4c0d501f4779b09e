"""The official RocketMQ 5 Python client's ``Producer.recall_message`` (gRPC RecallMessage,
RocketMQ 5.3), unchanged: sends two delay messages, ``recalled`` due in DELAY_S seconds and
``kept`` a second later (the client 5.1.2 takes delivery timestamps in whole seconds),
recalls the first with the ``recall_handle`` of its SendReceipt, then tries a recall with a
handle that is not one.

Run with the rocketmq-python-client virtualenv's Python:
``python python5_recall.py ENDPOINT TOPIC DELAY_S``. Prints one JSON line per step:
each receipt (body, message id, recall handle), the recall's answer (the message id), the
bad recall's error. Exit 0 when every step ran.
"""

from __future__ import annotations

import json
import sys
import time

from rocketmq import ClientConfiguration, Credentials, Message, Producer


def main() -> None:
    endpoint, topic, delay_s = sys.argv[1], sys.argv[2], int(sys.argv[3])
    producer = Producer(ClientConfiguration(endpoint, Credentials()), (topic,))
    producer.startup()
    try:
        receipts = {}
        due_s = int(time.time()) + delay_s
        for body, deliver_s in (("recalled", due_s), ("kept", due_s + 1)):
            message = Message()
            message.topic = topic
            message.body = body.encode()
            message.delivery_timestamp = deliver_s
            receipt = producer.send(message)
            receipts[body] = receipt
            line = {"body": body, "message_id": receipt.message_id}
            line["recall_handle"] = receipt.recall_handle or ""
            line["deliver_ms"] = deliver_s * 1000
            print(json.dumps(line), flush=True)
        recalled = producer.recall_message(topic, receipts["recalled"].recall_handle)
        print(json.dumps({"recalled": recalled}), flush=True)
        try:
            producer.recall_message(topic, "not-a-handle")
            print(json.dumps({"bad_recall": "accepted"}), flush=True)
        except Exception as exc:  # the client raises its own exception for a status
            print(json.dumps({"bad_recall": str(exc)}), flush=True)
    finally:
        producer.shutdown()


if __name__ == "__main__":
    main()
