"""The blocking facades (``orbitmq.sync``) from plain threads: no event loop in the tests.

The in-process cluster is asyncio, so the fixture runs it on its own loop thread; the tests
themselves are ordinary functions, as user code on threads would be."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from orbitmq import (
    ConsumeContext,
    LitePullConsumerConfig,
    Message,
    MessageExt,
    MessageQueue,
    MQClientError,
    PushConsumerConfig,
    SendResult,
    SendStatus,
)
from orbitmq.client import (
    LocalTransactionState,
    OffsetOutOfRangeError,
    TransactionVerdict,
    select_by_hash,
)
from orbitmq.common import UniqueIdGenerator, decode_messages
from orbitmq.common import message_const as mc
from orbitmq.protocol import ConsumeFromWhere
from orbitmq.sync import AdminClient, LitePullConsumer, Producer, PushConsumer, QueueReader
from orbitmq.testing import ThreadedCluster
from tests.eventually import eventually

pytestmark = pytest.mark.timeout(90)

WAIT_S = 20.0
FROM_FIRST = PushConsumerConfig(consume_from_where=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET)


@pytest.fixture
def namesrv_addr(tmp_path: Path) -> Iterator[str]:
    """An InProcessCluster on a loop thread of its own; the test gets its name server."""
    with ThreadedCluster(tmp_path / "cluster") as cluster:
        yield cluster.namesrv_addr


def facade_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def new_facade_threads(name: str, before: list[threading.Thread]) -> set[threading.Thread]:
    """Threads named ``name`` that were not running ``before``: clients other tests hold
    for a whole session (the Spark tests' admin client) share the generic names."""
    return set(facade_threads(name)) - set(before)


class Received:
    """A plain-function listener that records bodies and the threads it ran on."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.bodies: list[bytes] = []
        self.threads: set[str] = set()

    def __call__(self, messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        with self._changed:
            self.bodies.extend(m.body for m in messages)
            self.threads.add(threading.current_thread().name)
            self._changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self._changed:
            done = self._changed.wait_for(lambda: len(set(self.bodies)) >= count, WAIT_S)
        assert done, f"got {len(set(self.bodies))} of {count}: {sorted(set(self.bodies))}"


class Callbacks:
    """``send_async`` callbacks' answers, and a bounded wait for them."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self.answers: list[tuple[SendResult | None, BaseException | None, str]] = []

    def __call__(self, result: SendResult | None, error: BaseException | None) -> None:
        with self._changed:
            self.answers.append((result, error, threading.current_thread().name))
            self._changed.notify_all()

    def wait_for(self, count: int) -> None:
        with self._changed:
            assert self._changed.wait_for(lambda: len(self.answers) >= count, WAIT_S)


def test_sync_producer_sends_every_way_and_a_plain_listener_receives_everything(
    namesrv_addr: str,
) -> None:
    received = Received()
    consumer = PushConsumer("sync-cg", namesrv_addr=namesrv_addr, config=FROM_FIRST)
    consumer.subscribe("SyncTopic")
    consumer.register_listener(received)
    callbacks = Callbacks()
    with Producer("sync-pg", namesrv_addr=namesrv_addr) as producer:
        # The first send creates the topic. A consumer started before its topic exists knows
        # no broker to heartbeat to and so stays unknown to the broker until its next
        # heartbeat (30 s): the asyncio PushConsumer's behaviour, not the facade's.
        single = producer.send(Message("SyncTopic", b"single"))
        with consumer:
            batch = producer.send([Message("SyncTopic", b"batch-%d" % i) for i in range(5)])
            # A runtime check of what the signature says: the facade hands back no future.
            assert producer.send_oneway(Message("SyncTopic", b"oneway")) is None
            futures = [
                producer.send_async(Message("SyncTopic", b"async-%d" % i), callbacks)
                for i in range(3)
            ]
            ordered = [
                producer.send(
                    Message("SyncTopic", b"ordered-%d" % i), selector=select_by_hash, arg="k"
                )
                for i in range(2)
            ]
            async_results = [f.result(WAIT_S) for f in futures]
            callbacks.wait_for(3)
            received.wait_for(12)

    assert single.send_status is SendStatus.SEND_OK
    assert single.message_queue.topic == "SyncTopic"
    assert len(batch.msg_id.split(",")) == 5
    assert {r.send_status for r in async_results} == {SendStatus.SEND_OK}
    assert ordered[0].message_queue == ordered[1].message_queue
    # Each callback got its send's result, on the producer's loop thread.
    assert sorted(r.msg_id for r, _, _ in callbacks.answers if r is not None) == sorted(
        r.msg_id for r in async_results
    )
    assert {(e, t) for _, e, t in callbacks.answers} == {(None, "orbitmq-sync-producer-sync-pg")}
    expected = {b"single", b"oneway"} | {b"batch-%d" % i for i in range(5)}
    expected |= {b"async-%d" % i for i in range(3)} | {b"ordered-%d" % i for i in range(2)}
    assert set(received.bodies) == expected
    # The plain function ran on the consumer's thread pool, never on a loop thread.
    assert all(name.startswith("orbitmq-consume") for name in received.threads)
    assert not facade_threads("orbitmq-sync-producer-sync-pg")
    assert not facade_threads("orbitmq-sync-consumer-sync-cg")


def test_one_producer_serves_many_threads_at_once(namesrv_addr: str) -> None:
    results: list[SendResult] = []
    lock = threading.Lock()

    def send_ten(producer: Producer, who: int) -> None:
        for i in range(10):
            result = producer.send(Message("SharedSync", b"t%d-%d" % (who, i)))
            with lock:
                results.append(result)

    with Producer("threads-pg", namesrv_addr=namesrv_addr) as producer:
        senders = [threading.Thread(target=send_ten, args=(producer, n)) for n in range(4)]
        for t in senders:
            t.start()
        for t in senders:
            t.join(WAIT_S)
        assert not any(t.is_alive() for t in senders)

    assert len(results) == 40
    assert len({r.msg_id for r in results}) == 40
    assert {r.send_status for r in results} == {SendStatus.SEND_OK}


def test_shutdown_twice_is_harmless_and_a_send_after_it_raises(namesrv_addr: str) -> None:
    producer = Producer("after-pg", namesrv_addr=namesrv_addr)
    assert len(facade_threads("orbitmq-sync-producer-after-pg")) == 1
    producer.start()
    producer.send(Message("AfterTopic", b"before"))
    producer.shutdown()
    producer.shutdown()
    assert not facade_threads("orbitmq-sync-producer-after-pg")

    with pytest.raises(MQClientError, match="shut down"):
        producer.send(Message("AfterTopic", b"after"))
    with pytest.raises(MQClientError, match="shut down"):
        producer.send_oneway(Message("AfterTopic", b"after"))
    with pytest.raises(MQClientError, match="shut down"):
        producer.start()
    # send_async reports through its future and callback, never by raising.
    callbacks = Callbacks()
    future = producer.send_async(Message("AfterTopic", b"after"), callbacks)
    assert isinstance(future.exception(0), MQClientError)
    callbacks.wait_for(1)
    [(result, error, _)] = callbacks.answers
    assert result is None and isinstance(error, MQClientError)

    consumer = PushConsumer("after-cg", namesrv_addr=namesrv_addr)
    consumer.subscribe("AfterTopic")
    consumer.register_listener(Received())
    consumer.start()
    consumer.shutdown()
    consumer.shutdown()
    assert not facade_threads("orbitmq-sync-consumer-after-cg")
    with pytest.raises(MQClientError, match="shut down"):
        consumer.subscribe("Other")


def test_errors_arrive_as_the_clients_types_and_leave_no_thread() -> None:
    # No cluster: every one of these fails before the network is needed.
    with pytest.raises(MQClientError, match="group is empty"):
        Producer("", namesrv_addr="127.0.0.1:1")
    assert not facade_threads("orbitmq-sync-producer-")

    producer = Producer("errors-pg", namesrv_addr="127.0.0.1:1")
    try:
        with pytest.raises(MQClientError, match="start it"):
            producer.send(Message("T", b"x"))  # the asyncio Producer's own refusal
    finally:
        producer.shutdown()

    consumer = PushConsumer("errors-cg", namesrv_addr="127.0.0.1:1")

    async def not_plain(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        pass

    with pytest.raises(MQClientError, match="plain function"):
        consumer.register_listener(not_plain)  # type: ignore[arg-type]
    # start fails (no listener): ``with`` shuts the facade down before the error leaves.
    with pytest.raises(MQClientError, match="register a listener"), consumer:
        pass
    assert not facade_threads("orbitmq-sync-consumer-errors-cg")


def test_a_blocking_call_from_a_send_async_callback_raises_instead_of_deadlocking(
    namesrv_addr: str,
) -> None:
    errors: list[BaseException] = []
    done = threading.Event()
    with Producer("callback-pg", namesrv_addr=namesrv_addr) as producer:

        def send_again(result: SendResult | None, error: BaseException | None) -> None:
            try:
                producer.send(Message("CallbackTopic", b"again"))
            except MQClientError as exc:
                errors.append(exc)
            finally:
                done.set()

        producer.send_async(Message("CallbackTopic", b"first"), send_again).result(WAIT_S)
        assert done.wait(WAIT_S)
    [error] = errors
    assert "deadlock" in str(error)


def test_sync_admin_client_creates_and_describes_a_topic(namesrv_addr: str) -> None:
    before = facade_threads("orbitmq-sync-admin")
    with AdminClient(namesrv_addr=namesrv_addr) as admin:
        brokers = admin.create_topic("AdminSync", queue_nums=3)
        assert list(brokers) == ["broker-a"]
        assert "AdminSync" in admin.list_topics()
        assert len(admin.topic_status("AdminSync")) == 3
        assert "broker-a" in admin.master_addrs()
    assert not new_facade_threads("orbitmq-sync-admin", before)


def test_sync_admin_client_views_a_message_by_the_id_send_returned(namesrv_addr: str) -> None:
    msg = Message("ViewSync", b"v")
    # A unique id as a producer with pid 4242 makes it (the pid fixes how it decodes).
    uniq = UniqueIdGenerator(ip=bytes([127, 0, 0, 1]), pid=4242).create()
    msg.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = uniq
    with Producer("view-pg", namesrv_addr=namesrv_addr) as producer:
        result = producer.send(msg)
    with AdminClient(namesrv_addr=namesrv_addr) as admin:
        with pytest.raises(MQClientError, match=r"is a unique id .* needs its topic"):
            admin.view_message(result.msg_id)
        assert admin.view_message(result.offset_msg_id).unique_key == uniq
        deadline = time.monotonic() + WAIT_S
        while True:  # the index follows the commit log in the background
            try:
                assert admin.view_message(uniq, "ViewSync").body == b"v"
                break
            except MQClientError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)


def poll_until(consumer: LitePullConsumer, count: int) -> list[MessageExt]:
    got: list[MessageExt] = []
    deadline = time.monotonic() + WAIT_S
    while len(got) < count:
        assert time.monotonic() < deadline, f"polled {len(got)} of {count}"
        got.extend(consumer.poll(timeout_s=1.0))
    return got


def test_sync_lite_pull_consumer_assigns_polls_commits_and_seeks(namesrv_addr: str) -> None:
    q0 = MessageQueue("LiteSync", "broker-a", 0)
    with Producer("lite-pg", namesrv_addr=namesrv_addr) as producer:
        for i in range(10):
            producer.send(Message("LiteSync", b"m-%d" % i), queue=q0)

    consumer = LitePullConsumer(
        "lite-sync-cg", namesrv_addr=namesrv_addr, config=LitePullConsumerConfig(auto_commit=False)
    )
    assert q0 in consumer.fetch_message_queues("LiteSync")
    consumer.assign([q0])
    with consumer:
        assert consumer.assignment() == {q0}
        assert [m.queue_offset for m in poll_until(consumer, 10)] == list(range(10))
        assert consumer.poll(timeout_s=0.2) == []
        consumer.commit_sync()
        assert consumer.committed(q0) == 10
        consumer.seek(q0, 3)
        assert [m.body for m in poll_until(consumer, 7)] == [b"m-%d" % i for i in range(3, 10)]
        with pytest.raises(MQClientError, match="illegal"):
            consumer.seek(q0, 11)
    assert not facade_threads("orbitmq-sync-lite-pull-lite-sync-cg")
    with pytest.raises(MQClientError, match="shut down"):
        consumer.poll(timeout_s=0)


def test_sync_producer_stages_halves_that_its_verdicts_commit_or_roll_back(
    namesrv_addr: str,
) -> None:
    mq = MessageQueue("TxSync", "broker-a", 1)
    commit, rollback = LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE
    with Producer("tx-sync-pg", namesrv_addr=namesrv_addr) as producer:
        kept = producer.send_half([Message("TxSync", b"keep-%d" % i) for i in range(3)], mq)
        dropped = producer.send_half(Message("TxSync", b"drop"), mq, timeout_s=WAIT_S)
        producer.end_transactions(
            [
                [TransactionVerdict.of_half(kept, commit)],
                [TransactionVerdict.of_half(dropped, rollback)],
            ],
            timeout_s=WAIT_S,
        )
        producer.send(Message("TxSync", b"plain"), queue=mq, retry_times=0)
    with QueueReader(namesrv_addr) as reader:
        deadline = time.monotonic() + WAIT_S
        while reader.queue_offsets("TxSync")[mq] != (0, 4):
            assert time.monotonic() < deadline, "the commit was never stored"
            time.sleep(0.02)
        bodies = [m.body for batch in reader.read(mq, 0, 4) for m in batch]
    assert bodies == [b"keep-0", b"keep-1", b"keep-2", b"plain"]


def committed(consumer: PushConsumer, admin: AdminClient, group: str) -> int:
    """The group's offsets at the broker, summed, after the consumer persisted its own."""
    consumer.persist_offsets()
    try:
        return sum(q.consumer_offset for q in admin.consumer_progress(group).queues)
    except MQClientError:  # nothing committed yet
        return 0


def test_sync_consumers_show_subscriptions_send_back_and_persist_offsets(
    namesrv_addr: str,
) -> None:
    received: list[MessageExt] = []
    arrived = threading.Event()

    def listener(messages: Sequence[MessageExt], context: ConsumeContext) -> None:
        received.extend(messages)
        arrived.set()

    with Producer("subs-pg", namesrv_addr=namesrv_addr) as producer:
        producer.send(Message("SubsSync", b"m", properties={mc.PROPERTY_TAGS: "TagA"}))
    consumer = PushConsumer("subs-sync-cg", namesrv_addr=namesrv_addr, config=FROM_FIRST)
    consumer.subscribe("SubsSync", "TagA || TagB")
    consumer.register_listener(listener)
    assert consumer.subscribed_topics() == {"SubsSync"}
    assert consumer.subscriptions["SubsSync"].tags_set == {"TagA", "TagB"}
    with consumer, AdminClient(namesrv_addr=namesrv_addr) as admin:
        consumer.rebalance_now()
        assert arrived.wait(WAIT_S)
        assert consumer.send_message_back(received[0], 3) is True
        deadline = time.monotonic() + WAIT_S
        while committed(consumer, admin, "subs-sync-cg") < 1:
            assert time.monotonic() < deadline, "the offset was never persisted"
            time.sleep(0.02)

    lite = LitePullConsumer("subs-lite-cg", namesrv_addr=namesrv_addr)
    try:
        lite.subscribe("SubsSync", "TagB")
        assert lite.subscribed_topics() == {"SubsSync"}
        assert lite.subscriptions["SubsSync"].sub_string == "TagB"
        lite.unsubscribe("SubsSync")
        assert lite.subscriptions == {}
    finally:
        lite.shutdown()


def test_a_forgotten_shutdown_does_not_hang_interpreter_exit() -> None:
    # The loop threads are daemons: a started producer and consumer never shut down must
    # not keep the interpreter alive at exit.
    code = (
        "from orbitmq.sync import Producer, PushConsumer\n"
        "p = Producer('forgotten-pg', namesrv_addr='127.0.0.1:1')\n"
        "p.start()\n"
        "c = PushConsumer('forgotten-cg', namesrv_addr='127.0.0.1:1')\n"
        "print('started', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=WAIT_S, check=False
    )
    assert (done.returncode, done.stdout) == (0, "started\n"), done.stderr


def test_sync_queue_reader_reads_ranges_searches_and_commits(namesrv_addr: str) -> None:
    before = facade_threads("orbitmq-sync-reader") + facade_threads("orbitmq-sync-admin")
    q2 = MessageQueue("ReaderSync", "broker-a", 2)
    with Producer("reader-pg", namesrv_addr=namesrv_addr) as producer:
        producer.send([Message("ReaderSync", b"m-%d" % i) for i in range(30)], queue=q2)
    reader = QueueReader(namesrv_addr)
    with reader:
        eventually(
            lambda: reader.queue_offsets("ReaderSync")[q2] == (0, 30),
            WAIT_S,
            what="the consume queue to be built",
        )
        batches = list(reader.read(q2, 4, 27, batch_size=10))
        assert [len(b) for b in batches] == [10, 10, 3]
        got = [m for b in batches for m in b]
        assert [m.queue_offset for m in got] == list(range(4, 27))
        assert [m.body for m in got] == [b"m-%d" % i for i in range(4, 27)]
        # A read of stored messages is the same whenever it runs: no MIN/MAX_OFFSET.
        assert not {"MIN_OFFSET", "MAX_OFFSET"} & set(got[0].properties)

        # Undecoded: each pull's stored records, over a blocking socket of the reader's own.
        raw = [decode_messages(bytes(view)) for view in reader.read_raw(q2, 4, 27, batch_size=10)]
        assert [m.queue_offset for b in raw for m in b if m.queue_offset < 27] == list(range(4, 27))
        assert [m.body for b in raw for m in b][:3] == [b"m-4", b"m-5", b"m-6"]
        views = reader.read_raw(q2, 0, 30, batch_size=10)
        first = next(views)
        head = bytes(first)
        next(views)  # the second answer is read into the buffer the first one's view shows
        assert bytes(first) != head
        views.close()  # left with a pull in flight: that channel is closed, not reused
        with pytest.raises(OffsetOutOfRangeError, match=r"at or past the end.*\[0, 30\)"):
            list(reader.read_raw(q2, 28, 35, batch_size=10))
        assert list(reader.read_raw(q2, 30, 30)) == []

        # Leaving a read early closes it; the reader goes on serving.
        for batch in reader.read(q2, 0, 30, batch_size=5):
            assert [m.queue_offset for m in batch] == [0, 1, 2, 3, 4]
            break
        assert reader.search_offset(q2, 0) == 0
        assert reader.search_offset(q2, int(time.time() * 1000) + 60_000) == 30

        reader.commit_offset("reader-progress-cg", q2, 17)
        with AdminClient(namesrv_addr=namesrv_addr) as admin:
            progress = admin.consumer_progress("reader-progress-cg", "ReaderSync")
            admin_addrs = admin.master_addrs()
        mine = [q for q in progress.queues if q.queue == q2]
        assert [(q.consumer_offset, q.lag) for q in mine] == [(17, 13)]
        assert reader.broker_addr(q2) == admin_addrs["broker-a"]
    assert not new_facade_threads("orbitmq-sync-reader", before)
    reader.close()  # as shutdown: harmless again
