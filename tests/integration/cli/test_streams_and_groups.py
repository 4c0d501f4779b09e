"""``orbitmq send``, ``consume`` and ``query``, and the group commands (consumerProgress,
resetOffsetByTime, dlq list|resend), against two running brokers."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from orbitmq.client import Producer, QueueReader
from orbitmq.common import Message
from orbitmq.testing import ThreadedCluster
from tests.eventually import eventually
from tests.integration.cli.conftest import Orbitmq


def test_send_lines_then_consume_them_and_see_the_group_progress(orbitmq: Orbitmq) -> None:
    topic, group = "Lines", "lines-cg"
    orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", topic, "-w", "1", "-r", "1")
    sent = orbitmq.json_lines("send", "-t", topic, "--tags", "TagA", "--keys", "k1 k2",
                              "--props", "tenant=t1", stdin="one\ntwo\nthree\n")  # fmt: skip
    sent += orbitmq.json_lines("send", "-t", topic, "four")
    assert [r["sendStatus"] for r in sent] == ["SEND_OK"] * 4

    rows = orbitmq.json_lines("consume", "-t", topic, "-g", group, "--from", "first",
                              "--count", "4")  # fmt: skip
    assert sorted(r["body"] for r in rows) == ["four", "one", "three", "two"]
    assert {r["msgId"] for r in rows} == {r["msgId"] for r in sent}
    first = next(r for r in rows if r["body"] == "one")
    assert (first["tags"], first["keys"]) == ("TagA", "k1 k2")

    progress = orbitmq.json("admin", "consumerProgress", "-g", group, "-t", topic)
    assert progress["diffTotal"] == 0
    assert sum(q["consumerOffset"] for q in progress["queues"] if q["topic"] == topic) == 4

    reset = orbitmq.json("admin", "resetOffsetByTime", "-g", group, "-t", topic, "-s", "0")
    assert {r["offset"] for r in reset} == {0}
    assert orbitmq.json("admin", "consumerProgress", "-g", group, "-t", topic)["diffTotal"] == 4
    # The group goes on from its committed offsets: exactly 2 consumed, 2 left.
    again = orbitmq.json_lines("consume", "-t", topic, "-g", group, "--count", "2")
    assert len(again) == 2
    assert orbitmq.json("admin", "consumerProgress", "-g", group, "-t", topic)["diffTotal"] == 2


def test_consume_from_a_time_or_the_first_offset(orbitmq: Orbitmq) -> None:
    topic = "FromTime"
    orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", topic, "-w", "2", "-r", "2")
    orbitmq.json_lines("send", "-t", topic, stdin="old1\nold2\n")
    time.sleep(0.01)
    since = str(time.time_ns() // 1_000_000)
    time.sleep(0.01)
    orbitmq.json_lines("send", "-t", topic, stdin="new1\nnew2\n")
    rows = orbitmq.json_lines("consume", "-t", topic, "-g", "time-cg", "--from", since,
                              "--count", "2")  # fmt: skip
    assert sorted(r["body"] for r in rows) == ["new1", "new2"]
    rows = orbitmq.json_lines("consume", "-t", topic, "-g", "time-cg", "--from", "first",
                              "--count", "1")  # fmt: skip
    assert len(rows) == 1
    # One message read, but the group has an offset on every queue: it can be reset.
    reset = orbitmq.json("admin", "resetOffsetByTime", "-g", "time-cg", "-t", topic, "-s", since)
    assert len(reset) == 4
    assert orbitmq.json("admin", "consumerProgress", "-g", "time-cg", "-t", topic)["diffTotal"] == 2


def test_consume_from_last_prints_only_what_arrives(
    orbitmq: Orbitmq, cluster: ThreadedCluster
) -> None:
    topic = "Tail"
    orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", topic, "-w", "2", "-r", "2")
    orbitmq.json_lines("send", "-t", topic, stdin="early1\nearly2\n")
    done = threading.Event()

    async def keep_sending() -> None:
        async with Producer("tail-pg", namesrv_addr=cluster.namesrv_addr) as producer:
            for i in range(100):
                if done.is_set():
                    return
                await producer.send(Message(topic, b"late %d" % i))
                await asyncio.sleep(0.1)

    sender = threading.Thread(target=lambda: cluster.call(keep_sending()))
    sender.start()
    try:
        rows = orbitmq.json_lines("consume", "-t", topic, "-g", "tail-cg", "--from", "last",
                                  "--count", "2")  # fmt: skip
    finally:
        done.set()
        sender.join()
    assert [r["body"].split()[0] for r in rows] == ["late", "late"]


def test_query_by_id_key_offset_and_time(orbitmq: Orbitmq) -> None:
    topic = "Queried"
    orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", topic, "-w", "1", "-r", "1")
    before = str(time.time_ns() // 1_000_000 - 1)
    sent = orbitmq.json_lines("send", "-t", topic, "--keys", "invoice-7", stdin="a\nb\n")
    by_id = orbitmq.json("query", "-i", sent[0]["offsetMsgId"])
    assert (by_id["body"], by_id["msgId"]) == ("a", sent[0]["msgId"])
    by_unique = orbitmq.json("query", "-i", sent[1]["msgId"], "-t", topic)
    assert by_unique["body"] == "b"
    by_key = eventually(
        lambda: orbitmq.json("query", "-t", topic, "-k", "invoice-7") or None, what="indexed"
    )
    assert {r["msgId"] for r in by_key} <= {r["msgId"] for r in sent}
    assert orbitmq.json("query", "-t", topic, "-k", "invoice-7", "--begin", "0", "--end", "1") == []
    where = sent[1]
    at = orbitmq.json("query", "-t", topic, "-b", where["brokerName"], "-q",
                      str(where["queueId"]), "-o", str(where["queueOffset"]))  # fmt: skip
    assert at["body"] == "b"
    in_range = orbitmq.json("query", "-t", topic, "--begin", before, "--end", "now", "--body")
    assert sorted(r["body"] for r in in_range) == ["a", "b"]
    assert orbitmq.json("query", "-t", topic, "--begin", "0", "--end", before) == []
    assert "give one of --id, --key, --offset, --begin" in orbitmq.error("query", "-t", topic)
    assert "(got --id, --key)" in orbitmq.error("query", "-t", topic, "-i", "X", "-k", "Y")
    assert "needs -t/--topic" in orbitmq.error("query", "-k", "invoice-7")
    assert "'soon' is not a time" in orbitmq.error("query", "-t", topic, "--begin", "soon")


def test_bad_input_to_send_and_consume_is_one_line(orbitmq: Orbitmq) -> None:
    assert orbitmq.error("send", "-t", "Lines", "--props", "novalue", "x") == (
        "orbitmq: error: --props: 'novalue' is not key=value"
    )
    assert "--from: 'yesterday' is not a time" in orbitmq.error(
        "consume", "-t", "Lines", "-g", "g", "--from", "yesterday"
    )


def make_dead_letters(cluster: ThreadedCluster, topic: str, group: str, count: int) -> None:
    """``count`` messages of ``topic`` that ``group`` sends straight to its DLQ."""

    async def run() -> None:
        async with Producer("dlq-pg", namesrv_addr=cluster.namesrv_addr) as producer:
            results = [await producer.send(Message(topic, b"dead %d" % i)) for i in range(count)]
        async with QueueReader(cluster.namesrv_addr) as reader:
            for result in results:
                mq, offset = result.message_queue, result.queue_offset
                async for message, *_ in reader.read(mq, offset, offset + 1):
                    addr = await reader.broker_addr(mq)
                    # Delay level -1: to the dead letter queue at once.
                    await reader.instance.api.consumer_send_message_back(
                        addr, message, group, -1, 16, 3.0
                    )

    cluster.call(run())


def test_dlq_list_and_resend_once(orbitmq: Orbitmq, cluster: ThreadedCluster) -> None:
    topic, group = "Payments", "payments-cg"
    orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", topic, "-w", "1", "-r", "1")
    make_dead_letters(cluster, topic, group, 3)
    letters: list[dict[str, Any]] = eventually(
        lambda: _three(orbitmq.json("admin", "dlq", "list", "-g", group)), what="3 dead letters"
    )
    assert {d["originalTopic"] for d in letters} == {topic}
    assert len(orbitmq.json("admin", "dlq", "list", "-g", group, "-m", "2")) == 2

    one = orbitmq.json("admin", "dlq", "resend", "-g", group, "-i", letters[0]["msgId"])
    assert [r["status"] for r in one] == ["sent"]
    every = orbitmq.json("admin", "dlq", "resend", "-g", group)
    assert sorted(r["status"] for r in every) == ["already_resent", "sent", "sent"]
    assert [r["status"] for r in orbitmq.json("admin", "dlq", "resend", "-g", group)] == [
        "already_resent"
    ] * 3
    missing = orbitmq.json("admin", "dlq", "resend", "-g", group, "-i", "0" * 32)
    assert [r["status"] for r in missing] == ["not_found"]
    assert orbitmq.json("admin", "dlq", "list", "-g", "no-such-group") == []


def _three(rows: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    return rows if len(rows) == 3 else None
