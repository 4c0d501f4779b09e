"""Pull answers decoded column by column, checked against the message decoder: every
column of every row, IPv6 hosts, compressed bodies, ids without UNIQ_KEY, the tag re-check,
the end offset, and malformed answers."""

from __future__ import annotations

import datetime as dt
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import MessageExt, string_to_message_properties
from orbitmq.common import sys_flag as sf
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.message_decoder import decode_messages, encode_message
from orbitmq.spark.arrow_records import records_to_batch
from orbitmq.spark.schema import ARROW_SCHEMA

UTC = dt.UTC


def record(offset: int, **changes: Any) -> bytes:
    fields: dict[str, Any] = {
        "topic": "T",
        "body": b"body-%d" % offset,
        "properties": {"UNIQ_KEY": f"{offset:032X}", "TAGS": "TagA", "KEYS": "k1 k2"},
        "queue_id": 3,
        "queue_offset": offset,
        "commit_log_offset": 1000 * offset,
        "born_timestamp": 1_700_000_000_000 + offset,
        "born_host": ("10.0.0.2", 52000),
        "store_timestamp": 1_700_000_000_500 + offset,
        "store_host": ("10.0.0.1", 10911),
        "reconsume_times": offset % 3,
    }
    fields.update(changes)
    return encode_message(MessageExt(**fields))


def expected_rows(data: bytes) -> list[dict[str, Any]]:
    """What each row must hold, from the message decoder (the oracle)."""
    rows = []
    for m in decode_messages(data):
        body = zlib.decompress(m.body) if m.sys_flag & sf.COMPRESSED_FLAG else m.body
        props = m.properties
        rows.append(
            {
                "topic": "T",
                "brokerName": "broker-a",
                "queueId": 3,
                "queueOffset": m.queue_offset,
                "msgId": props.get("UNIQ_KEY") or m.msg_id,
                "tags": props.get("TAGS"),
                "keys": props["KEYS"].split() if "KEYS" in props else [],
                "properties": sorted(props.items()),
                "body": body,
                "bornTimestamp": dt.datetime.fromtimestamp(m.born_timestamp / 1000, UTC),
                "storeTimestamp": dt.datetime.fromtimestamp(m.store_timestamp / 1000, UTC),
                "reconsumeTimes": m.reconsume_times,
            }
        )
    return rows


def decoded(data: bytes, **kwargs: Any) -> list[dict[str, Any]]:
    batch = records_to_batch(
        data, "T", "broker-a", 3, end_offset=kwargs.pop("end", 10**9), **kwargs
    )
    assert batch.schema.equals(ARROW_SCHEMA)
    rows: list[dict[str, Any]] = batch.to_pylist()
    for row in rows:
        row["properties"] = sorted(row["properties"])
    return rows


def test_every_column_matches_the_message_decoder() -> None:
    data = b"".join(record(i) for i in range(40))
    assert decoded(data) == expected_rows(data)


def test_a_batch_keeps_nothing_of_the_answer_it_was_decoded_from() -> None:
    # The blocking reader hands out views of a buffer the next answer overwrites.
    data = b"".join(record(i) for i in range(40))
    data += record(40, body=zlib.compress(b"z" * 100), sys_flag=sf.COMPRESSED_FLAG)
    data += record(41, properties={"TAGS": "NoUniqKey"})
    buffer = bytearray(data)
    batch = records_to_batch(memoryview(buffer), "T", "broker-a", 3, end_offset=10**9)
    buffer[:] = bytes(len(buffer))
    rows = batch.to_pylist()
    for row in rows:
        row["properties"] = sorted(row["properties"])
    assert rows == expected_rows(data)


@pytest.mark.parametrize("size", [0, 1, 4, 11, 12, 13, 100, 1024, 70_000])
def test_bodies_of_every_length_around_arrow_s_inline_limit(size: int) -> None:
    # Arrow keeps values of up to 12 bytes inside its views, longer ones by reference.
    data = b"".join(record(i, body=bytes([65 + i]) * size) for i in range(5))
    rows = decoded(data)
    assert rows == expected_rows(data)
    assert [r["body"] for r in rows] == [bytes([65 + i]) * size for i in range(5)]


def test_ipv6_hosts_compressed_bodies_and_unusual_properties() -> None:
    data = b"".join(
        [
            record(0, born_host=("2001:db8::1", 40000)),
            record(1, store_host=("2001:db8::2", 10911), properties={"TAGS": "TagB"}),
            record(
                2,
                born_host=("2001:db8::3", 1),
                store_host=("2001:db8::4", 2),
                body=zlib.compress(b"z" * 5000),
                sys_flag=sf.COMPRESSED_FLAG,
            ),
            record(3, properties={"KEYS": "  spaced   keys ", "név": "érték ✓"}, body=b"s"),
            record(4, properties={}),
        ]
    )
    rows = decoded(data)
    assert rows == expected_rows(data)
    assert rows[2]["body"] == b"z" * 5000
    # No UNIQ_KEY: the offset message id (store host + commit log offset), 56 hex digits
    # for an IPv6 store host, 32 for IPv4.
    assert len(rows[1]["msgId"]) == 56 and len(rows[4]["msgId"]) == 32
    assert rows[3]["keys"] == ["spaced", "keys"] and rows[4]["keys"] == []
    assert rows[4]["properties"] == [] and rows[4]["tags"] is None


def test_a_piece_without_a_separator_is_skipped_as_rocketmq_does() -> None:
    broken = record(0, properties={"TAGS": "TagA"})
    raw = encode_message(
        MessageExt(topic="T", body=b"x", queue_id=3, queue_offset=1),
        properties_string="garbage\x02TAGS\x01TagC\x02",
    )
    rows = decoded(broken + raw)
    assert rows[1]["properties"] == [("TAGS", "TagC")] and rows[1]["tags"] == "TagC"


_PROPERTY_TEXT = st.text(alphabet=st.sampled_from("\x01\x02 aKEYSTAG_é✓"), max_size=40)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(_PROPERTY_TEXT, min_size=1, max_size=8))
def test_any_property_string_reads_as_the_message_decoder_reads_it(texts: list[str]) -> None:
    # Odd strings too: empty names, pieces without a separator, repeated names (the last
    # wins, as in a dict), keys with runs of spaces, strings cut mid-pair.
    data = b"".join(
        encode_message(MessageExt(topic="T", body=b"b", queue_id=3, queue_offset=i), text)
        for i, text in enumerate(texts)
    )
    rows = records_to_batch(data, "T", "broker-a", 3, end_offset=10**9).to_pylist()
    for row, text in zip(rows, texts, strict=True):
        expected = string_to_message_properties(text)
        assert dict(row["properties"]) == expected
        assert row["tags"] == expected.get("TAGS")
        assert row["keys"] == [k for k in expected.get("KEYS", "").split(" ") if k]


def test_tag_recheck_and_end_offset_keep_only_what_the_range_asked_for() -> None:
    tags = ["TagA", "TagB", None, "TagC"] * 5
    data = b"".join(
        record(i, properties={"TAGS": t} if t else {"UNIQ_KEY": "X"}) for i, t in enumerate(tags)
    )
    kept = decoded(data, tags_set=frozenset({"TagA", "TagC"}), end=15)
    assert [r["queueOffset"] for r in kept] == [0, 3, 4, 7, 8, 11, 12]
    assert [r["queueOffset"] for r in decoded(data, end=4)] == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:-5], "past the answer"),
        (lambda d: d[:4] + b"\x00\x00\x00\x00" + d[8:], "magic code"),
        (lambda d: b"\x00\x00\x00\x00" + d[4:], "size 0"),
    ],
)
def test_malformed_answers_raise_a_format_error(damage: Any, message: str) -> None:
    data = record(0) + record(1)
    with pytest.raises(MessageFormatError, match=message):
        records_to_batch(damage(data), "T", "broker-a", 3, end_offset=10)


def test_invalid_utf8_in_properties_is_reported() -> None:
    raw = encode_message(MessageExt(topic="T", body=b"x", queue_id=3), properties_string="")
    bad = raw[:-2] + b"\x00\x02\xff\xfe"
    bad = (len(bad)).to_bytes(4, "big") + bad[4:]
    with pytest.raises(MessageFormatError, match="not valid UTF-8"):
        records_to_batch(bad, "T", "broker-a", 3, end_offset=10)
