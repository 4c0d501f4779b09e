"""``orbitmq admin``'s message commands: a message sent with sendMessage, found again by
offset id, unique id, key and queue offset, read by time range and by offset."""

from __future__ import annotations

import time
from typing import Any

import pytest

from orbitmq.cli.timestamps import format_timestamp_ms
from tests.eventually import eventually
from tests.integration.cli.conftest import Orbitmq

TOPIC = "Orders"


@pytest.fixture(scope="module")
def sent(orbitmq: Orbitmq) -> list[dict[str, Any]]:
    """Three messages to broker-a queue 0 of TOPIC, keyed and tagged, 5 ms apart."""
    orbitmq.json("admin", "updateTopic", "-c", "DefaultCluster", "-t", TOPIC, "-w", "2", "-r", "2")
    results = []
    for i in range(3):
        results.append(orbitmq.json("admin", "sendMessage", "-t", TOPIC, "-p", f"order {i}",
                                    "-k", f"order-{i} batch", "-c", "Paid", "-b", "broker-a",
                                    "-i", "0"))  # fmt: skip
        time.sleep(0.005)
    return results


def test_send_message_answers_where_it_was_stored(sent: list[dict[str, Any]]) -> None:
    assert [(r["brokerName"], r["queueId"], r["sendStatus"]) for r in sent] == [
        ("broker-a", 0, "SEND_OK")
    ] * 3
    assert [r["queueOffset"] for r in sent] == [0, 1, 2]


def test_query_by_offset_id_and_by_unique_key(orbitmq: Orbitmq, sent: list[dict[str, Any]]) -> None:
    found = orbitmq.json("admin", "queryMsgById", "-i", sent[1]["offsetMsgId"])
    assert (found["body"], found["tags"], found["keys"]) == ("order 1", "Paid", "order-1 batch")
    assert (found["msgId"], found["queueOffset"]) == (sent[1]["msgId"], 1)
    unique = eventually(
        lambda: _found(
            orbitmq, "admin", "queryMsgByUniqueKey", "-i", sent[2]["msgId"], "-t", TOPIC
        ),
        what="the unique key in the index",
    )
    assert (unique["offsetMsgId"], unique["body"]) == (sent[2]["offsetMsgId"], "order 2")
    line = orbitmq.error("admin", "queryMsgByUniqueKey", "-i", "0" * 32, "-t", TOPIC)
    assert line.endswith(f"no message with unique id {'0' * 32} in topic {TOPIC}")


def _found(orbitmq: Orbitmq, *args: str) -> Any:
    result = orbitmq.run(*args, "--json")
    return orbitmq.json(*args) if result.exit_code == 0 else None


def test_query_by_key_in_a_time_range(orbitmq: Orbitmq, sent: list[dict[str, Any]]) -> None:
    rows = eventually(
        lambda: _all_three(orbitmq.json("admin", "queryMsgByKey", "-t", TOPIC, "-k", "batch")),
        what="the keys in the index",
    )
    assert [r["msgId"] for r in rows] == [r["msgId"] for r in sent]
    # The index is searched newest first: -m 1 finds one of them.
    (one,) = orbitmq.json("admin", "queryMsgByKey", "-t", TOPIC, "-k", "batch", "-m", "1")
    assert one in rows
    assert orbitmq.json("admin", "queryMsgByKey", "-t", TOPIC, "-k", "batch", "-e", "1") == []


def _all_three(rows: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    return rows if len(rows) == 3 else None


def test_query_by_offset(orbitmq: Orbitmq, sent: list[dict[str, Any]]) -> None:
    found = orbitmq.json("admin", "queryMsgByOffset", "-t", TOPIC, "-b", "broker-a", "-i", "0",
                         "-o", "2")  # fmt: skip
    assert (found["msgId"], found["body"]) == (sent[2]["msgId"], "order 2")
    line = orbitmq.error("admin", "queryMsgByOffset", "-t", TOPIC, "-b", "broker-a", "-i", "0",
                         "-o", "9")  # fmt: skip
    assert "offset 9" in line and "[0, 3)" in line


def test_print_msg_reads_a_time_range(orbitmq: Orbitmq, sent: list[dict[str, Any]]) -> None:
    every = orbitmq.json("admin", "printMsg", "-t", TOPIC)
    assert [r["body"] for r in every] == ["order 0", "order 1", "order 2"]
    second = orbitmq.json("admin", "queryMsgByOffset", "-t", TOPIC, "-b", "broker-a", "-i", "0",
                          "-o", "1")  # fmt: skip
    begin = str(second["storeTimestamp"])
    from_second = orbitmq.json("admin", "printMsg", "-t", TOPIC, "-b", begin, "-d", "false")
    assert [r["msgId"] for r in from_second] == [r["msgId"] for r in sent[1:]]
    assert "body" not in from_second[0]
    # mqadmin's time form, local time to the millisecond.
    mqadmin_form = format_timestamp_ms(second["storeTimestamp"]).replace(" ", "#")
    mqadmin_form = mqadmin_form[:-4] + ":" + mqadmin_form[-3:]
    until = orbitmq.json("admin", "printMsg", "-t", TOPIC, "-e", mqadmin_form)
    assert [r["body"] for r in until] == ["order 0"]


def test_consume_message_reads_from_an_offset(orbitmq: Orbitmq, sent: list[dict[str, Any]]) -> None:
    rows = orbitmq.json("admin", "consumeMessage", "-t", TOPIC, "-b", "broker-a", "-i", "0",
                        "-o", "1", "-c", "1")  # fmt: skip
    assert [r["body"] for r in rows] == ["order 1"]
    every = orbitmq.json("admin", "consumeMessage", "-t", TOPIC)
    assert len(every) == 3
    assert "needs -b/--brokerName" in orbitmq.error(
        "admin", "consumeMessage", "-t", TOPIC, "-i", "0"
    )


def test_check_msg_send_rt_times_each_send(orbitmq: Orbitmq) -> None:
    report = orbitmq.json("admin", "checkMsgSendRT", "-t", TOPIC, "-a", "4", "-s", "16")
    assert len(report["sends"]) == 4
    assert all(s["sendResult"] == "OK" and s["rtMs"] > 0 for s in report["sends"])
    assert (report["summary"]["successCount"], report["summary"]["failCount"]) == (4, 0)


def test_a_bad_timestamp_is_one_line(orbitmq: Orbitmq) -> None:
    line = orbitmq.error("admin", "printMsg", "-t", TOPIC, "-b", "last tuesday")
    assert line == (
        "orbitmq: error: -b/--beginTimestamp: 'last tuesday' is not a time (now, epoch"
        " milliseconds, yyyy-MM-dd#HH:mm:ss:SSS or ISO 8601)"
    )


def test_an_unknown_topic_is_one_line(orbitmq: Orbitmq) -> None:
    for command in ("topicStatus", "printMsg"):
        assert orbitmq.error("admin", command, "-t", "NoSuchTopic").endswith(
            "No route info of this topic: NoSuchTopic"
        )
