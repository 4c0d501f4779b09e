"""Blocking facades over the asyncio clients, for code that runs on plain threads (scripts,
WSGI apps, Spark executors): ``orbitmq.sync.Producer``, ``PushConsumer``,
``LitePullConsumer``, ``SimpleConsumer``, ``AdminClient``, ``QueueReader`` and
``TransactionProducer`` have the
names and methods of ``orbitmq.client``'s, without ``await`` (one module each here, over the
shared base in ``orbitmq.sync.facade``)::

    from orbitmq import Message
    from orbitmq.sync import Producer

    with Producer("group", namesrv_addr="127.0.0.1:9876") as producer:
        result = producer.send(Message("TopicTest", b"hello"))

The asyncio client does the work; a facade only carries each call to its event loop
(``asyncio.run_coroutine_threadsafe``) and waits, bounded, for the answer. Exceptions arrive
as the client raised them (``MQClientError``, ``MQBrokerError``, ``RemotingError``,
``TimeoutError``), so code may move between the two styles without changing its ``except``.

**One event-loop thread per facade object**, not one shared by the process, because:

- shutdown is deterministic: ``shutdown()`` stops the client, stops its loop, cancels what is
  left on it and joins its thread before returning; nothing of the facade outlives it, and a
  process-wide loop would have no owner to decide when it may stop;
- a blocking send hook or ``send_async`` callback stalls only its own client, not every
  client of the process;
- no module-level singleton (DESIGN.md: seams are injected, no globals), so tests and users
  can create and discard facades freely.

The cost is one thread and one loop per client object; processes typically hold a few. The
thread is a daemon: a forgotten ``shutdown`` does not hang interpreter exit (the client then
simply stops, as after ``kill``; its offsets are committed up to the last periodic persist).
A facade is single-use: once shut down it cannot start again; create a new one.
"""

from orbitmq.sync.admin_client import AdminClient
from orbitmq.sync.facade import DEFAULT_CALL_TIMEOUT_S
from orbitmq.sync.lite_pull_consumer import LitePullConsumer
from orbitmq.sync.producer import Producer, SendCallback
from orbitmq.sync.push_consumer import PushConsumer, SyncListener
from orbitmq.sync.queue_reader import QueueReader
from orbitmq.sync.simple_consumer import SimpleConsumer
from orbitmq.sync.transaction_producer import TransactionProducer

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "AdminClient",
    "LitePullConsumer",
    "Producer",
    "PushConsumer",
    "QueueReader",
    "SendCallback",
    "SimpleConsumer",
    "SyncListener",
    "TransactionProducer",
]
