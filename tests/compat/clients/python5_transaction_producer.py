"""Send transactional messages with the official ``rocketmq-python-client`` (5.x, gRPC)
transaction Producer and its checker; print one JSON line per send, verdict and check; keep
answering checks until killed (or until ``--exit-after-checks`` checks were answered).

Run with a compat virtualenv's Python:
``python python5_transaction_producer.py ENDPOINT TOPIC [ACCESS_KEY SECRET_KEY]``.

Three messages, bodies ``commit``, ``rollback`` and ``unknown``: the first is committed by
the producer, the second rolled back, the third left to the broker's check. The checker
answers COMMIT for ``unknown`` and ROLLBACK for anything else (a check of the other two
would be a bug). Lines:
``{"sent": BODY, "message_id", "transaction_id"}``, ``{"ended": BODY, "resolution"}`` and
``{"check": BODY, "message_id", "answer", "tag", "keys"}``.
"""

from __future__ import annotations

import json
import sys
import threading

from rocketmq import (
    ClientConfiguration,
    Credentials,
    Message,
    Producer,
    TransactionChecker,
    TransactionResolution,
)

PRINT_LOCK = threading.Lock()


def emit(**fields: object) -> None:
    with PRINT_LOCK:
        print(json.dumps(fields), flush=True)


class Checker(TransactionChecker):  # type: ignore[misc]
    def check(self, message: Message) -> TransactionResolution:
        body = message.body.decode()
        answer = (
            TransactionResolution.COMMIT if body == "unknown" else TransactionResolution.ROLLBACK
        )
        emit(
            check=body,
            message_id=message.message_id,
            answer="COMMIT" if answer == TransactionResolution.COMMIT else "ROLLBACK",
            tag=message.tag,
            keys=sorted(message.keys),
        )
        return answer


def main() -> None:
    endpoint, topic = sys.argv[1], sys.argv[2]
    credentials = Credentials(sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else Credentials()
    producer = Producer(ClientConfiguration(endpoint, credentials), (topic,), checker=Checker())
    producer.startup()
    for body in ("commit", "rollback", "unknown"):
        transaction = producer.begin_transaction()
        message = Message()
        message.topic = topic
        message.body = body.encode()
        message.tag = "tx"
        message.keys = f"key-{body}"
        receipt = producer.send(message, transaction)
        emit(sent=body, message_id=receipt.message_id, transaction_id=receipt.transaction_id)
        if body == "commit":
            transaction.commit()
            emit(ended=body, resolution="COMMIT")
        elif body == "rollback":
            transaction.rollback()
            emit(ended=body, resolution="ROLLBACK")
    emit(ready=True)
    threading.Event().wait()  # answer checks until killed


if __name__ == "__main__":
    main()
