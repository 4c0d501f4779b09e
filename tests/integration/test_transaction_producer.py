"""The transactional producer (R35, client side) against an in-process cluster whose broker
checks back fast: a verdict from the local transaction, or from the check of a half whose
local transaction said UNKNOW; plain and ``async def`` listeners; the blocking facade;
END_TRANSACTION's fields as RocketMQ's producer sends them; a check answered by a new
producer of the group after the one that sent the half is gone (shut down, or its process
killed)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from orbitmq import sync
from orbitmq.client import (
    LocalTransactionState,
    SendStatus,
    TransactionProducer,
    queue_offsets,
    read_queue_range,
)
from orbitmq.common import Message, MessageExt, decode_message_id
from orbitmq.protocol.header import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)
from orbitmq.testing import InProcessCluster
from tests.eventually import eventually_async

pytestmark = pytest.mark.timeout(60)

PRODUCER_PROCESS = Path(__file__).resolve().parent / "clients" / "transaction_producer_process.py"

TOPIC = "TxProducerTopic"
GROUP = "tx-producer-pg"
COMMIT = LocalTransactionState.COMMIT_MESSAGE
ROLLBACK = LocalTransactionState.ROLLBACK_MESSAGE
UNKNOW = LocalTransactionState.UNKNOW


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[InProcessCluster]:
    # Halves are checked 200 ms after they are stored, every 200 ms.
    settings = {"transaction_time_out": 200, "transaction_check_interval": 200}
    async with InProcessCluster(tmp_path / "cluster", broker_settings=settings) as running:
        yield running


async def visible(cluster: InProcessCluster) -> list[bytes]:
    """The bodies a consumer of TOPIC can read, of every queue."""
    bodies: list[bytes] = []
    for mq, (low, high) in (await queue_offsets(cluster.namesrv_addr, TOPIC)).items():
        async for batch in read_queue_range(
            cluster.namesrv_addr, TOPIC, mq.broker_name, mq.queue_id, low, high
        ):
            bodies.extend(m.body for m in batch)
    return sorted(bodies)


async def visible_at_least(cluster: InProcessCluster, count: int) -> list[bytes] | None:
    """The visible bodies once there are ``count`` of them."""
    bodies = await visible(cluster)
    return bodies if len(bodies) >= count else None


class Listener:
    """Executes by the body's verdict ("commit", "rollback", else UNKNOW) and answers the
    n-th check of a half with ``checks_answer[n]`` (the last one after that). Records the
    bodies it was asked about, from any thread."""

    def __init__(self, *checks_answer: LocalTransactionState) -> None:
        self.checks_answer = checks_answer or (UNKNOW,)
        self.executed: list[tuple[bytes, Any]] = []
        self.checked: list[bytes] = []
        self._lock = threading.Lock()

    def execute_local_transaction(self, msg: Message, arg: Any) -> LocalTransactionState:
        with self._lock:
            self.executed.append((msg.body, arg))
        if msg.body.startswith(b"commit"):
            return COMMIT
        if msg.body.startswith(b"rollback"):
            return ROLLBACK
        if msg.body.startswith(b"raise"):
            raise RuntimeError("the local transaction failed")
        return UNKNOW

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        with self._lock:
            self.checked.append(msg.body)
            n = len([b for b in self.checked if b == msg.body])
        return self.checks_answer[min(n, len(self.checks_answer)) - 1]


class AsyncListener(Listener):
    """The same, as ``async def`` methods run on the producer's loop."""

    async def execute_local_transaction(  # type: ignore[override]
        self, msg: Message, arg: Any
    ) -> LocalTransactionState:
        await asyncio.sleep(0)
        return Listener.execute_local_transaction(self, msg, arg)

    async def check_local_transaction(  # type: ignore[override]
        self, msg: MessageExt
    ) -> LocalTransactionState:
        await asyncio.sleep(0)
        return Listener.check_local_transaction(self, msg)


async def test_commit_is_visible_and_rollback_never(cluster: InProcessCluster) -> None:
    listener = Listener()
    async with TransactionProducer(
        GROUP, transaction_listener=listener, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        rolled = await producer.send_message_in_transaction(Message(TOPIC, b"rollback"), arg=1)
        committed = await producer.send_message_in_transaction(Message(TOPIC, b"commit"), 2)

        assert committed.send_result.send_status is SendStatus.SEND_OK
        assert (committed.local_transaction_state, rolled.local_transaction_state) == (
            COMMIT,
            ROLLBACK,
        )
        assert listener.executed == [(b"rollback", 1), (b"commit", 2)]
        assert await eventually_async(lambda: visible(cluster), 5) == [b"commit"]
        await asyncio.sleep(1.0)  # several check rounds: nothing left to check
        assert await visible(cluster) == [b"commit"]
        assert listener.checked == []


async def test_unknown_is_settled_by_the_check(cluster: InProcessCluster) -> None:
    listener = Listener(UNKNOW, COMMIT)
    async with TransactionProducer(
        GROUP, transaction_listener=listener, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        sent = await producer.send_message_in_transaction(Message(TOPIC, b"later"))
        assert sent.local_transaction_state is UNKNOW
        assert await visible(cluster) == []

        assert await eventually_async(lambda: visible(cluster), 10) == [b"later"]
        assert listener.checked == [b"later", b"later"]
        await asyncio.sleep(1.0)  # committed: checked no more, visible once
        assert await visible(cluster) == [b"later"]
        assert listener.checked == [b"later", b"later"]


async def test_a_listener_that_raises_leaves_it_to_the_check(cluster: InProcessCluster) -> None:
    listener = Listener(ROLLBACK)
    async with TransactionProducer(
        GROUP, transaction_listener=listener, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        sent = await producer.send_message_in_transaction(Message(TOPIC, b"raise"))
        assert sent.local_transaction_state is UNKNOW
        await eventually_async(lambda: listener.checked, 10)
        await asyncio.sleep(1.0)  # rolled back by the check: checked once, never visible
        assert listener.checked == [b"raise"]
        assert await visible(cluster) == []


async def test_async_listener(cluster: InProcessCluster) -> None:
    listener = AsyncListener(COMMIT)
    async with TransactionProducer(
        GROUP, transaction_listener=listener, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        now = await producer.send_message_in_transaction(Message(TOPIC, b"commit-now"))
        later = await producer.send_message_in_transaction(Message(TOPIC, b"unknown"))
        assert (now.local_transaction_state, later.local_transaction_state) == (COMMIT, UNKNOW)
        assert await eventually_async(lambda: visible_at_least(cluster, 2), 10) == [
            b"commit-now",
            b"unknown",
        ]
        assert listener.checked == [b"unknown"]


async def test_blocking_facade(cluster: InProcessCluster) -> None:
    # The facade blocks its caller: a thread, so this loop keeps serving the cluster.
    listener = Listener(COMMIT)
    states = await asyncio.to_thread(run_blocking, cluster.namesrv_addr, listener)
    assert states == [COMMIT, UNKNOW]
    assert listener.executed == [(b"commit-now", "arg"), (b"unknown", None)]
    assert listener.checked[:1] == [b"unknown"]
    assert await eventually_async(lambda: visible_at_least(cluster, 2), 10) == [
        b"commit-now",
        b"unknown",
    ]


def run_blocking(namesrv_addr: str, listener: Listener) -> list[LocalTransactionState]:
    """Two transactions through the blocking facade, the second settled by the check."""
    with sync.TransactionProducer(
        GROUP, transaction_listener=listener, namesrv_addr=namesrv_addr
    ) as producer:
        now = producer.send_message_in_transaction(Message(TOPIC, b"commit-now"), "arg")
        later = producer.send_message_in_transaction(Message(TOPIC, b"unknown"))
        # Still running, the facade answers the check.
        deadline = time.monotonic() + 10
        while not listener.checked and time.monotonic() < deadline:
            time.sleep(0.05)
        return [now.local_transaction_state, later.local_transaction_state]


class RecordedEnds:
    """Every END_TRANSACTION ``producer`` sends (its header fields and remark) and every
    check it is handed (the header), recorded on their way through the real calls."""

    def __init__(self, producer: TransactionProducer, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ends: list[tuple[dict[str, str], str | None]] = []
        self.checks: list[dict[str, str]] = []
        api = producer.instance.api
        end_transaction = api.end_transaction
        check_transaction_state = producer.check_transaction_state

        async def end(
            addr: str, header: EndTransactionRequestHeader, timeout_s: float, **kw: Any
        ) -> None:
            self.ends.append((header.to_ext_fields(), kw.get("remark")))
            await end_transaction(addr, header, timeout_s, **kw)

        def check(addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader) -> None:
            self.checks.append(header.to_ext_fields())
            check_transaction_state(addr, msg, header)

        monkeypatch.setattr(api, "end_transaction", end)
        monkeypatch.setattr(producer, "check_transaction_state", check)


class FailsFirstCheck(Listener):
    """Raises on its local transaction and on the first check; commits on the second."""

    def check_local_transaction(self, msg: MessageExt) -> LocalTransactionState:
        if Listener.check_local_transaction(self, msg) is not COMMIT:
            raise RuntimeError("the database is still down")
        return COMMIT


async def test_end_transaction_carries_rocketmqs_fields(
    cluster: InProcessCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As RocketMQ 4.9.8's DefaultMQProducerImpl.endTransaction and checkTransactionState:
    the verdict names the half as stored, UNKNOW is sent too, a listener's exception goes in
    the remark; a check's answer repeats the check's offsets and transaction id."""
    listener = FailsFirstCheck(UNKNOW, COMMIT)
    async with TransactionProducer(
        GROUP, transaction_listener=listener, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        recorded = RecordedEnds(producer, monkeypatch)
        sent = await producer.send_message_in_transaction(Message(TOPIC, b"raise"))
        assert await eventually_async(lambda: visible(cluster), 10) == [b"raise"]
    result = sent.send_result
    uniq = result.msg_id
    first, first_remark = recorded.ends[0]
    assert first == {
        "producerGroup": GROUP,
        "tranStateTableOffset": str(result.queue_offset),
        "commitLogOffset": str(decode_message_id(result.offset_msg_id)[1]),
        "commitOrRollback": "0",  # UNKNOW: sent, the broker ignores it
        "fromTransactionCheck": "false",
        "msgId": uniq,  # the UNIQ_KEY; no transactionId (the send answer gave none)
        "bname": "broker-a",
    }
    assert first_remark == (
        "executeLocalTransactionBranch exception: RuntimeError: the local transaction failed"
    )
    # Two checks: each of the half's current copy (put back, so a later offset each time).
    assert len(recorded.checks) == 2 and len(recorded.ends) == 3
    for check, (answer, _remark) in zip(recorded.checks, recorded.ends[1:], strict=True):
        assert check["msgId"] == check["transactionId"] == uniq
        assert check["bname"] == "broker-a"
        assert int(check["tranStateTableOffset"]) > result.queue_offset
        assert decode_message_id(check["offsetMsgId"])[1] == int(check["commitLogOffset"])
        assert answer == {
            "producerGroup": GROUP,
            "tranStateTableOffset": check["tranStateTableOffset"],
            "commitLogOffset": check["commitLogOffset"],
            "commitOrRollback": answer["commitOrRollback"],
            "fromTransactionCheck": "true",
            "msgId": uniq,
            "transactionId": uniq,
            "bname": "broker-a",
        }
    assert [a["commitOrRollback"] for a, _r in recorded.ends[1:]] == ["0", "8"]
    assert [r for _a, r in recorded.ends[1:]] == [
        "checkLocalTransactionState Exception: RuntimeError: the database is still down",
        None,
    ]


async def test_a_new_producer_of_the_group_answers_for_one_that_is_gone(
    cluster: InProcessCluster,
) -> None:
    """The producer that sent the half shuts down (its process restarts) before the check;
    the broker asks the new producer of the same group, whose listener commits it."""
    gone = Listener(UNKNOW)
    async with TransactionProducer(
        GROUP, transaction_listener=gone, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        sent = await producer.send_message_in_transaction(Message(TOPIC, b"orphan"))
        assert sent.local_transaction_state is UNKNOW
    assert await visible(cluster) == []

    restarted = Listener(COMMIT)
    async with TransactionProducer(
        GROUP, transaction_listener=restarted, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        # Sending is what makes a new producer known to the broker (its heartbeat).
        await producer.send_message_in_transaction(Message(TOPIC, b"commit-new"))
        assert await eventually_async(lambda: visible_at_least(cluster, 2), 10) == [
            b"commit-new",
            b"orphan",
        ]
    assert restarted.checked == [b"orphan"]
    assert gone.checked == []


async def test_a_half_whose_producer_process_was_killed_is_answered_by_its_successor(
    cluster: InProcessCluster,
) -> None:
    """The process that staged the half is killed (SIGKILL: no unregister); a new process
    of the group (here a producer in this one) answers the broker's check."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    argv = [sys.executable, str(PRODUCER_PROCESS), cluster.namesrv_addr, TOPIC, GROUP, "killed"]
    victim = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert victim.stdout is not None
        staged = await asyncio.wait_for(asyncio.to_thread(victim.stdout.readline), 30)
        assert staged.startswith("STAGED ")
    finally:
        victim.kill()
        victim.wait()
    assert await visible(cluster) == []

    successor = Listener(COMMIT)
    async with TransactionProducer(
        GROUP, transaction_listener=successor, namesrv_addr=cluster.namesrv_addr
    ) as producer:
        await producer.send_message_in_transaction(Message(TOPIC, b"commit-next"))
        assert await eventually_async(lambda: visible_at_least(cluster, 2), 10) == [
            b"commit-next",
            b"killed",
        ]
    assert successor.checked[:1] == [b"killed"]
    assert await visible(cluster) == [b"commit-next", b"killed"]  # once
