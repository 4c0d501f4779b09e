"""MessageTrace from trace messages: rows of one message id only, Sub rows from SubAfter
records with their retries from the SubBefore of the same request, and the records of
RocketMQ's C++ client (SubAfter without group or time, empty keys) read back."""

from __future__ import annotations

from orbitmq.client.trace import message_trace
from orbitmq.common import MessageExt

C, F = "\x01", "\x02"
ID = "C0A8000100002A9F0000000000000001"


def record(*fields: object) -> str:
    return C.join(map(str, fields)) + F


def trace_message(body: str, host: str) -> MessageExt:
    return MessageExt(topic="RMQ_SYS_TRACE_TOPIC", body=body.encode(), born_host=(host, 50000))


def test_rows_of_the_asked_id_with_retries_from_sub_before() -> None:
    producer = trace_message(
        record("Pub", 1000, "DefaultRegion", "pg", "T", ID, "TagA", "k", "10.0.0.1:10911", 5,
               2, 0, "OFF", "true")
        + record("Pub", 1001, "DefaultRegion", "pg", "T", "OTHER", "null", "null", "h", 5, 2,
                 0, "OFF2", "true"),
        "10.0.0.7",
    )  # fmt: skip
    consumer = trace_message(
        record("SubBefore", 2000, "DefaultRegion", "cg", "R1", ID, 0, "k")
        + record("SubAfter", "R1", ID, 30, "false", "k", 2, 2030, "cg")
        + record("SubBefore", 3000, "DefaultRegion", "cg", "R2", ID, 1, "k")
        + record("SubAfter", "R2", ID, 4, "true", "k", 0, 3004, "cg"),
        "10.0.0.8",
    )
    trace = message_trace(ID, [consumer, producer])
    (pub,) = trace.pub
    assert (pub.group, pub.client_host, pub.send_time_ms, pub.store_host) == (
        "pg",
        "10.0.0.7",
        1000,
        "10.0.0.1:10911",
    )
    rows = [
        (s.group, s.client_host, s.success, s.retry_times, s.consume_time_ms) for s in trace.sub
    ]
    assert rows == [("cg", "10.0.0.8", False, 0, 2030), ("cg", "10.0.0.8", True, 1, 3004)]
    assert trace.end_transaction == []


def test_cpp_client_records_without_group_or_time_take_them_from_sub_before() -> None:
    # rocketmq-client-cpp writes a 6-field SubAfter and empty (not "null") absent keys.
    body = record("SubBefore", 5000, "", "cpp-cg", "R9", ID, 3, "") + record(
        "SubAfter", "R9", ID, 7, "true", ""
    )
    (sub,) = message_trace(ID, [trace_message(body, "10.0.0.9")]).sub
    assert (sub.group, sub.consume_time_ms, sub.retry_times, sub.cost_time_ms) == (
        "cpp-cg",
        5000,
        3,
        7,
    )


def test_a_sub_after_without_its_sub_before_says_retries_unknown() -> None:
    body = record("SubAfter", "R", ID, 1, "true", "null", 0, 10, "g")
    (sub,) = message_trace(ID, [trace_message(body, "h")]).sub
    assert (sub.group, sub.retry_times) == ("g", -1)
