"""A PushConsumer in its own process, for tests that kill it: prints ``READY`` once started,
then one line per message body as it is consumed.

Run: ``python push_consumer_process.py NAMESRV TOPIC GROUP``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from orbitmq.client import ConsumeContext, PushConsumer
from orbitmq.common import MessageExt


async def main() -> None:
    namesrv, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]

    async def on_messages(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        sys.stdout.write("".join(m.body.decode() + "\n" for m in messages))
        sys.stdout.flush()

    consumer = PushConsumer(group, namesrv_addr=namesrv)
    consumer.subscribe(topic)
    consumer.register_listener(on_messages)
    await consumer.start()
    print("READY", flush=True)
    await asyncio.Event().wait()  # until killed


if __name__ == "__main__":
    asyncio.run(main())
