"""A TransactionProducer in its own process, for the test that kills it: sends one
transactional message whose local transaction answers UNKNOW, prints ``STAGED <msg id>``,
then waits to be killed (it answers checks UNKNOW meanwhile).

Run: ``python transaction_producer_process.py NAMESRV TOPIC GROUP BODY``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from orbitmq.client import LocalTransactionState, TransactionProducer
from orbitmq.common import Message, MessageExt


class NeverKnows:
    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.UNKNOW


async def main() -> None:
    namesrv, topic, group, body = sys.argv[1:5]
    producer = TransactionProducer(group, transaction_listener=NeverKnows(), namesrv_addr=namesrv)
    await producer.start()
    sent = await producer.send_message_in_transaction(Message(topic, body.encode()))
    print("STAGED", sent.send_result.msg_id, flush=True)
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(main())
