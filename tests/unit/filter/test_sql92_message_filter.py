"""The broker's SQL92 MessageFilter on stored records: the PROPERTIES field found past the
body and topic (IPv4 and IPv6 hosts), the named properties picked out of it, and the retry
filter that judges a retried message by its original topic's filter."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orbitmq.common import MessageExt, encode_message, message_properties_to_string
from orbitmq.common import message_const as mc
from orbitmq.common.message import SocketAddress
from orbitmq.filter import (
    PropertyPicker,
    RetrySql92MessageFilter,
    Sql92Expression,
    Sql92MessageFilter,
    TagMessageFilter,
    parse_sql92,
    record_properties_bytes,
)


def record(
    properties: dict[str, str],
    body: bytes = b"x" * 1024,
    host: SocketAddress = ("10.0.0.1", 10911),
    topic: str = "T",
) -> memoryview:
    message = MessageExt(
        topic=topic, body=body, properties=properties, born_host=host, store_host=host
    )
    return memoryview(encode_message(message))


@pytest.mark.parametrize("host", [("10.0.0.1", 10911), ("::1", 10911)])
def test_the_properties_field_is_found_past_body_and_topic(host: SocketAddress) -> None:
    properties = {"a": "1", "TAGS": "TagA", "b": "é"}
    raw = record_properties_bytes(record(properties, host=host, topic="TopicLonger"))
    assert raw == message_properties_to_string(properties).encode()


def test_picker_takes_only_the_names_asked_for() -> None:
    raw = message_properties_to_string({"ab": "1", "b": "2", "xb": "3", "c": ""}).encode()
    assert PropertyPicker(frozenset({"b", "c", "missing"})).pick(raw) == {"b": "2", "c": ""}
    assert PropertyPicker(frozenset({"ab"})).pick(raw) == {"ab": "1"}
    assert PropertyPicker(frozenset({"a"})).pick(raw) == {}
    assert PropertyPicker(frozenset({"b"})).pick(b"") == {}


def test_a_name_twice_takes_the_last_value() -> None:
    raw = b"a\x011\x02a\x012\x02"
    assert PropertyPicker(frozenset({"a"})).pick(raw) == {"a": "2"}


@given(
    st.dictionaries(
        st.text(alphabet="abcXYZ_", min_size=1, max_size=4),
        st.text(alphabet="abc 1é=", max_size=5),
        max_size=6,
    )
)
def test_picker_agrees_with_a_full_decode(properties: dict[str, str]) -> None:
    raw = message_properties_to_string(properties).encode()
    names = frozenset(properties) | {"absent"}
    assert PropertyPicker(names).pick(raw) == properties


def test_filter_passes_the_consume_queue_and_judges_the_record() -> None:
    message_filter = Sql92MessageFilter(parse_sql92("a > 5 AND TAGS = 'TagA'"))
    assert message_filter.is_matched_by_consume_queue(12345)
    assert message_filter.is_matched_by_commit_log(record({"a": "6", "TAGS": "TagA"}))
    assert not message_filter.is_matched_by_commit_log(record({"a": "6", "TAGS": "TagB"}))
    assert not message_filter.is_matched_by_commit_log(record({"a": "x", "TAGS": "TagA"}))
    assert not message_filter.is_matched_by_commit_log(record({}))


def test_retry_filter_uses_the_original_topics_filter() -> None:
    filters = {("Orders", "g"): parse_sql92("a = 1")}

    def lookup(topic: str, group: str) -> Sql92Expression | None:
        return filters.get((topic, group))

    retry = RetrySql92MessageFilter("%RETRY%g", lookup, TagMessageFilter(None))
    assert retry.group == "g"
    retried = {mc.PROPERTY_RETRY_TOPIC: "Orders"}
    assert retry.is_matched_by_commit_log(record({**retried, "a": "1"}))
    assert not retry.is_matched_by_commit_log(record({**retried, "a": "2"}))
    # Another topic without a filter in the group, and a message not retried: delivered.
    assert retry.is_matched_by_commit_log(record({mc.PROPERTY_RETRY_TOPIC: "Other", "a": "2"}))
    assert retry.is_matched_by_commit_log(record({"a": "2"}))
