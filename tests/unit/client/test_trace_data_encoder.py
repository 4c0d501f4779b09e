"""RocketMQ's trace record layout (TraceDataEncoder): our records are written field for field
as RocketMQ's clients write them, records written by RocketMQ's clients (built here from the
documented layout, old shorter forms included) are read back, and every record survives the
round trip."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.client.trace import (
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
    decode_trace_data,
    encode_trace_context,
)

C, F = "\x01", "\x02"
MSG_ID = "7F00000100002A9F0000000000000001"
OFFSET_ID = "7F00000100002A9F00000000000004D2"


def record(*fields: object) -> str:
    return C.join(map(str, fields)) + F


def pub_context(**bean: object) -> TraceContext:
    fields: dict[str, object] = {
        "topic": "TopicTest",
        "msg_id": MSG_ID,
        "offset_msg_id": OFFSET_ID,
        "tags": "TagA",
        "keys": "k1 k2",
        "store_host": "127.0.0.1:10911",
        "body_length": 11,
        "msg_type": TraceMessageType.NORMAL_MSG,
    }
    fields.update(bean)
    return TraceContext(
        TraceType.PUB,
        timestamp_ms=1_700_000_000_000,
        region_id="DefaultRegion",
        group_name="pg",
        cost_time_ms=3,
        success=True,
        trace_beans=[TraceBean(**fields)],  # type: ignore[arg-type]
    )


def test_pub_is_written_as_rocketmq_writes_it() -> None:
    bean = encode_trace_context(pub_context())
    assert bean.trans_data == record(
        "Pub", 1_700_000_000_000, "DefaultRegion", "pg", "TopicTest", MSG_ID, "TagA",
        "k1 k2", "127.0.0.1:10911", 11, 3, 0, OFFSET_ID, "true",
    )  # fmt: skip
    # Indexed under the message id and each key, so a query by either finds it.
    assert bean.trans_keys == {MSG_ID, "k1", "k2"}


def test_absent_tags_and_keys_are_written_null_as_java_does() -> None:
    bean = encode_trace_context(pub_context(tags=None, keys=None))
    fields = bean.trans_data.rstrip(F).split(C)
    assert fields[6:8] == ["null", "null"]
    assert bean.trans_keys == {MSG_ID}
    decoded = decode_trace_data(bean.trans_data)[0].trace_beans[0]
    assert (decoded.tags, decoded.keys) == (None, None)


def test_sub_records_one_per_message_in_rocketmqs_order() -> None:
    beans = [TraceBean(msg_id="A", retry_times=0, keys="ka"), TraceBean(msg_id="B", retry_times=2)]
    before = TraceContext(
        TraceType.SUB_BEFORE, 1000, "DefaultRegion", "cg", request_id="R1", trace_beans=beans
    )
    after = TraceContext(
        TraceType.SUB_AFTER, 1500, "DefaultRegion", "cg", cost_time_ms=7, success=False,
        request_id="R1", context_code=4, trace_beans=beans,
    )  # fmt: skip
    assert encode_trace_context(before).trans_data == (
        record("SubBefore", 1000, "DefaultRegion", "cg", "R1", "A", 0, "ka")
        + record("SubBefore", 1000, "DefaultRegion", "cg", "R1", "B", 2, "null")
    )
    assert encode_trace_context(after).trans_data == (
        record("SubAfter", "R1", "A", 7, "false", "ka", 4, 1500, "cg")
        + record("SubAfter", "R1", "B", 7, "false", "null", 4, 1500, "cg")
    )
    assert encode_trace_context(after).trans_keys == {"A", "B", "ka"}


def test_end_transaction_record() -> None:
    ctx = TraceContext(
        TraceType.END_TRANSACTION, 42, "DefaultRegion", "tg",
        trace_beans=[
            TraceBean(
                topic="T", msg_id=MSG_ID, tags=None, keys="order-1", store_host="h:1",
                msg_type=TraceMessageType.TRANS_MSG_COMMIT, transaction_id=None,
                transaction_state="COMMIT_MESSAGE", from_transaction_check=True,
            )
        ],
    )  # fmt: skip
    assert encode_trace_context(ctx).trans_data == record(
        "EndTransaction", 42, "DefaultRegion", "tg", "T", MSG_ID, "null", "order-1", "h:1", 2,
        "null", "COMMIT_MESSAGE", "true",
    )  # fmt: skip


def test_a_java_clients_trace_message_is_read_back() -> None:
    """A body as RocketMQ 4.9's Java client sends it: a Pub, then a consumer's SubBefore and
    SubAfter, records of several writers in one message."""
    body = (
        record("Pub", 1_700_000_000_000, "DefaultRegion", "please_rename_unique_group_name",
               "TopicTest", MSG_ID, "TagA", "null", "192.168.0.2:10911", 11, 5, 0,
               OFFSET_ID, "true")
        + record("SubBefore", 1_700_000_000_100, "DefaultRegion", "cg", "REQ", MSG_ID, 1,
                 "null")
        + record("SubAfter", "REQ", MSG_ID, 12, "true", "null", 0, 1_700_000_000_112, "cg")
    )  # fmt: skip
    pub, before, after = decode_trace_data(body)
    assert pub.trace_type is TraceType.PUB
    assert (pub.group_name, pub.cost_time_ms, pub.success) == (
        "please_rename_unique_group_name",
        5,
        True,
    )
    bean = pub.trace_beans[0]
    assert (bean.topic, bean.msg_id, bean.tags, bean.keys) == ("TopicTest", MSG_ID, "TagA", None)
    assert (bean.store_host, bean.body_length, bean.offset_msg_id) == (
        "192.168.0.2:10911",
        11,
        OFFSET_ID,
    )
    assert bean.msg_type is TraceMessageType.NORMAL_MSG
    assert (before.request_id, before.trace_beans[0].retry_times) == ("REQ", 1)
    assert (after.request_id, after.group_name, after.timestamp_ms) == (
        "REQ",
        "cg",
        1_700_000_000_112,
    )
    assert (after.cost_time_ms, after.success, after.context_code) == (12, True, 0)


def test_older_and_newer_record_lengths_are_read() -> None:
    pub13 = record("Pub", 1, "r", "g", "T", "M", "t", "k", "h", 3, 4, 3, "false")
    pub15 = record("Pub", 1, "r", "g", "T", "M", "t", "k", "h", 3, 4, 1, "O", "true", "10.0.0.9")
    sub6 = record("SubAfter", "R", "M", 9, "true", "k")
    sub7 = record("SubAfter", "R", "M", 9, "true", "k", 2)
    a, b, c, d = decode_trace_data(pub13 + pub15 + sub6 + sub7)
    assert (a.success, a.trace_beans[0].offset_msg_id) == (False, "")
    assert a.trace_beans[0].msg_type is TraceMessageType.DELAY_MSG
    assert (b.success, b.trace_beans[0].offset_msg_id, b.trace_beans[0].client_host) == (
        True,
        "O",
        "10.0.0.9",
    )
    assert (c.context_code, c.group_name, c.timestamp_ms) == (0, "", 0)
    assert (d.context_code, d.group_name) == (2, "")


def test_bad_records_are_skipped_and_the_others_kept() -> None:
    good = record("SubAfter", "R", "M", 9, "true", "k", 0, 5, "g")
    body = record("Pub", "not-a-number") + record("Recall", 1, 2) + good + record("SubBefore")
    assert [ctx.request_id for ctx in decode_trace_data(body)] == ["R"]
    assert decode_trace_data("") == []


_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"),
    min_size=1,
    max_size=12,
).filter(lambda s: s != "null")
_MAYBE = st.none() | _TEXT
_NUM = st.integers(min_value=0, max_value=2**31 - 1)


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(list(TraceType)),
    ts=st.integers(min_value=1, max_value=2**62),
    region=_TEXT,
    group=_TEXT,
    cost=_NUM,
    success=st.booleans(),
    request_id=_TEXT,
    code=st.integers(min_value=0, max_value=4),
    bean=st.builds(
        TraceBean,
        topic=_TEXT,
        msg_id=_TEXT,
        offset_msg_id=_TEXT,
        tags=_MAYBE,
        keys=_MAYBE,
        store_host=_TEXT,
        retry_times=_NUM,
        body_length=_NUM,
        msg_type=st.sampled_from(list(TraceMessageType)),
        transaction_state=st.sampled_from(["COMMIT_MESSAGE", "ROLLBACK_MESSAGE", "UNKNOW"]),
        transaction_id=_MAYBE,
        from_transaction_check=st.booleans(),
    ),
)
def test_round_trip(
    kind: TraceType,
    ts: int,
    region: str,
    group: str,
    cost: int,
    success: bool,
    request_id: str,
    code: int,
    bean: TraceBean,
) -> None:
    ctx = TraceContext(kind, ts, region, group, cost, success, request_id, code, [bean])
    (back,) = decode_trace_data(encode_trace_context(ctx).trans_data)
    assert back.trace_type is kind
    got = back.trace_beans[0]
    assert (got.msg_id, got.keys) == (bean.msg_id, bean.keys)
    if kind is not TraceType.SUB_BEFORE:
        assert back.success == (success if kind is not TraceType.END_TRANSACTION else True)
    if kind is TraceType.PUB:
        assert (back.timestamp_ms, back.region_id, back.group_name, back.cost_time_ms) == (
            ts, region, group, cost,
        )  # fmt: skip
        assert (got.topic, got.tags, got.store_host, got.body_length, got.msg_type) == (
            bean.topic, bean.tags, bean.store_host, bean.body_length, bean.msg_type,
        )  # fmt: skip
        assert got.offset_msg_id == bean.offset_msg_id
    elif kind is TraceType.SUB_BEFORE:
        assert (back.timestamp_ms, back.group_name, back.request_id, got.retry_times) == (
            ts, group, request_id, bean.retry_times,
        )  # fmt: skip
    elif kind is TraceType.SUB_AFTER:
        assert (back.request_id, back.cost_time_ms, back.context_code) == (request_id, cost, code)
        assert (back.timestamp_ms, back.group_name) == (ts, group)
    else:
        assert (got.topic, got.tags, got.transaction_id, got.transaction_state) == (
            bean.topic, bean.tags, bean.transaction_id, bean.transaction_state,
        )  # fmt: skip
        assert got.from_transaction_check == bean.from_transaction_check
