"""Batch-decoded messages keep an ASCII property string unparsed until ``properties`` is
read, and ``add_properties`` adds to either form: what anyone sees is what eager decoding
and dict assignments give."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import MessageExt, decode_message, decode_messages, encode_message
from orbitmq.common.message import add_properties
from tests.unit.common.codec_support import sample_message

ASCII_PROPERTIES = {"KEYS": "k1 k2", "TAGS": "TagA", "UNIQ_KEY": "7F0000010001", "WAIT": "true"}


def lazy(properties: dict[str, str]) -> MessageExt:
    """A message as the batch decoder gives it (checked: properties not parsed yet)."""
    (message,) = decode_messages(encode_message(sample_message(properties=properties)))
    assert message._properties_text is not None
    return message


def eager(properties: dict[str, str]) -> MessageExt:
    """The same message with its properties parsed at decode time."""
    return decode_message(encode_message(sample_message(properties=properties)))


def test_the_first_read_parses_and_later_reads_share_the_dict() -> None:
    message = lazy(ASCII_PROPERTIES)
    assert message.properties == ASCII_PROPERTIES
    assert message._properties_text is None
    assert message.properties is message.properties


def test_a_lazy_message_equals_the_eager_one_and_answers_the_same() -> None:
    message, reference = lazy(ASCII_PROPERTIES), eager(ASCII_PROPERTIES)
    assert (message.tags, message.keys, message.unique_key) == (
        "TagA",
        ["k1", "k2"],
        "7F0000010001",
    )
    assert lazy(ASCII_PROPERTIES) == reference
    assert repr(lazy(ASCII_PROPERTIES)) == repr(reference)
    assert message.wait_store_msg_ok and message.delay_time_level == 0


def test_changes_after_the_first_read_stay() -> None:
    message = lazy(ASCII_PROPERTIES)
    message.properties["TAGS"] = "TagB"
    del message.properties["WAIT"]
    message.keys = ["x"]
    assert message.properties == {"KEYS": "x", "TAGS": "TagB", "UNIQ_KEY": "7F0000010001"}
    assert message.tags == "TagB"


def test_a_dict_assigned_before_any_read_replaces_the_text() -> None:
    message = lazy(ASCII_PROPERTIES)
    message.properties = {"a": "1"}
    assert message.properties == {"a": "1"}
    message.settle_properties()
    add_properties([message], {"b": "2"})
    assert message.properties == {"a": "1", "b": "2"}


def test_non_ascii_properties_are_parsed_at_decode_time() -> None:
    (message,) = decode_messages(encode_message(sample_message()))
    assert message._properties_text is None
    assert message.properties["中"] == "文"


def test_copies_and_pickles_carry_the_properties() -> None:
    for clone in (
        copy.copy(lazy(ASCII_PROPERTIES)),
        pickle.loads(pickle.dumps(lazy(ASCII_PROPERTIES))),
    ):
        assert clone.properties == ASCII_PROPERTIES
        assert clone == eager(ASCII_PROPERTIES)


def test_other_missing_attributes_still_fail_as_usual() -> None:
    message = lazy(ASCII_PROPERTIES)
    with pytest.raises(AttributeError, match="'MessageExt' object has no attribute 'nothing'"):
        message.nothing  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(message, "nothing")
    assert message.properties == ASCII_PROPERTIES
    del message.properties  # once parsed, a deleted slot is gone as on any MessageExt
    with pytest.raises(AttributeError, match="has no attribute 'properties'"):
        message.properties  # noqa: B018


names = st.sampled_from(["TAGS", "KEYS", "MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME"])
values = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=6) | st.just(
    "v\x02w"
)
ascii_properties = st.dictionaries(names, values, max_size=4)


@settings(max_examples=200, deadline=None)
@given(
    ascii_properties,
    st.lists(st.dictionaries(names | st.sampled_from(["ü", "a\x01b", ""]), values, max_size=3)),
    st.booleans(),
)
def test_added_properties_end_as_dict_updates_would(
    original: dict[str, str], additions: list[dict[str, str]], read_between: bool
) -> None:
    message, reference = lazy(original), eager(original)
    for added in additions:
        add_properties([message], added)
        reference.properties.update(added)
        if read_between:
            assert message.properties == reference.properties
    assert list(message.properties.items()) == list(reference.properties.items())
