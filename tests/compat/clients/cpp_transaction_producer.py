"""Send transactional messages with the C++ client's transactional producer; print one JSON
line per send and per check; keep answering checks until killed.

Run with a compat virtualenv's Python:
``python cpp_transaction_producer.py NAMESRV TOPIC GROUP``.

``rocketmq-python-cvs`` bundles the C++ client 2.1.0, whose C API has the transactional
producer (CreateTransactionProducer, SendMessageTransaction; CProducer.h), but its Python
wrapper does not: ``TransactionMQProducer`` below is the wrapper's missing class, in the shape
of rocketmq-client-python 2.0's (a checker callback given at creation, a local-transaction
callback per send), over the bundled library.

Three messages, bodies ``commit``, ``rollback`` and ``unknown``: the local transaction
answers COMMIT, ROLLBACK and UNKNOWN. A check of ``unknown`` answers UNKNOWN the first time
and COMMIT after; a check of anything else answers ROLLBACK. Lines:
``{"sent": BODY, "status", "msg_id", "offset"}`` and
``{"check": BODY, "n": N, "answer": NAME, "msg_id", "transaction_id", "topic"}``.
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading
import time
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from rocketmq.client import Message, Producer, RecvMessage, SendResult, SendStatus
from rocketmq.ffi import _CSendResult, dll

PRINT_LOCK = threading.Lock()


class TransactionStatus(IntEnum):
    """CTransactionStatus.h."""

    COMMIT = 0
    ROLLBACK = 1
    UNKNOWN = 2


#: CLocalTransactionCheckerCallback and CLocalTransactionExecutorCallback: (producer,
#: message, user data) -> CTransactionStatus.
CHECKER_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
EXECUTOR_CALLBACK = ctypes.CFUNCTYPE(
    ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)
dll.CreateTransactionProducer.argtypes = [ctypes.c_char_p, CHECKER_CALLBACK, ctypes.c_void_p]
dll.CreateTransactionProducer.restype = ctypes.c_void_p
dll.SendMessageTransaction.argtypes = [
    ctypes.c_void_p,
    ctypes.c_void_p,
    EXECUTOR_CALLBACK,
    ctypes.c_void_p,
    ctypes.POINTER(_CSendResult),
]
dll.SendMessageTransaction.restype = ctypes.c_int


class TransactionMQProducer(Producer):  # type: ignore[misc]
    """A Producer made by CreateTransactionProducer: owns the checker callback, which the
    library calls on its own threads whenever the broker checks a half."""

    def __init__(self, group_id: str, checker: Callable[[RecvMessage], TransactionStatus]):
        def on_check(_producer: Any, msg: Any, _data: Any) -> int:
            try:
                return int(checker(RecvMessage(msg)))
            except Exception as exc:  # a raise must not cross into the C++ library
                print(json.dumps({"check_error": repr(exc)}), flush=True)
                return int(TransactionStatus.UNKNOWN)

        self._checker = CHECKER_CALLBACK(on_check)  # kept: the library calls it later
        self._handle = dll.CreateTransactionProducer(group_id.encode(), self._checker, None)
        self._callback_refs: list[Any] = []

    def send_message_in_transaction(
        self, msg: Message, local_execute: Callable[[Message], TransactionStatus]
    ) -> SendResult:
        def on_execute(_producer: Any, _msg: Any, _data: Any) -> int:
            return int(local_execute(msg))

        callback = EXECUTOR_CALLBACK(on_execute)
        result = _CSendResult()
        code = dll.SendMessageTransaction(
            self._handle, msg._handle, callback, None, ctypes.pointer(result)
        )
        if code != 0:
            raise RuntimeError(f"SendMessageTransaction returned {code}")
        return SendResult(SendStatus(result.sendStatus), result.msgId.decode(), result.offset)


def text(value: str | bytes | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def main() -> None:
    namesrv, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
    checks: dict[str, int] = {}

    def check(msg: RecvMessage) -> TransactionStatus:
        body = text(msg.body) or ""
        with PRINT_LOCK:
            checks[body] = n = checks.get(body, 0) + 1
            if body == "unknown":
                answer = TransactionStatus.UNKNOWN if n == 1 else TransactionStatus.COMMIT
            else:
                answer = TransactionStatus.ROLLBACK
            line = {
                "check": body,
                "n": n,
                "answer": answer.name,
                "msg_id": text(msg.id),
                "transaction_id": text(msg.get_property("UNIQ_KEY")),
                "topic": text(msg.topic),
            }
            print(json.dumps(line), flush=True)
        return answer

    producer = TransactionMQProducer(group, check)
    producer.set_namesrv_addr(namesrv)
    producer.start()
    verdicts = {
        "commit": TransactionStatus.COMMIT,
        "rollback": TransactionStatus.ROLLBACK,
        "unknown": TransactionStatus.UNKNOWN,
    }
    for body, verdict in verdicts.items():
        msg = Message(topic)
        msg.set_body(body)
        msg.set_keys(f"key-{body}")

        def local_execute(_msg: Message, answer: TransactionStatus = verdict) -> TransactionStatus:
            return answer

        result = producer.send_message_in_transaction(msg, local_execute)
        fields = {"sent": body, "status": result.status.name, "msg_id": result.msg_id}
        with PRINT_LOCK:
            print(json.dumps({**fields, "offset": result.offset}), flush=True)
    while True:  # answering checks until killed
        time.sleep(1)


if __name__ == "__main__":
    main()
