"""Subscription expressions and the consume-queue tag filter."""

from __future__ import annotations

import pytest

from orbitmq.common import java_string_hash
from orbitmq.filter import (
    SubscriptionParseError,
    TagMessageFilter,
    build_subscription,
    build_subscription_data,
)


@pytest.mark.parametrize("expression", [None, "", "*"])
def test_everything(expression: str | None) -> None:
    sub = build_subscription_data("T", expression)
    assert sub.is_sub_all and sub.sub_string == "*"
    assert TagMessageFilter(sub).is_matched_by_consume_queue(12345)


def test_tags_are_split_trimmed_and_hashed() -> None:
    sub = build_subscription_data("T", " TagA ||TagB|| ||")
    assert sub.tags_set == {"TagA", "TagB"}
    assert sub.code_set == {java_string_hash("TagA"), java_string_hash("TagB")}
    matcher = TagMessageFilter(sub)
    assert matcher.is_matched_by_consume_queue(java_string_hash("TagB"))
    assert not matcher.is_matched_by_consume_queue(java_string_hash("TagC"))
    assert not matcher.is_matched_by_consume_queue(0)  # no tag
    assert matcher.is_matched_by_commit_log(memoryview(b""))


def test_negative_hash_codes_match_as_java_ints() -> None:
    tag = "zzzzzzzzzz"
    code = java_string_hash(tag)
    assert code < 0
    matcher = TagMessageFilter(build_subscription_data("T", tag))
    assert matcher.is_matched_by_consume_queue(code)
    assert matcher.is_matched_by_consume_queue(code & 0xFFFFFFFF)  # stored unsigned


def test_sql92_needs_an_expression() -> None:
    with pytest.raises(SubscriptionParseError):
        build_subscription("T", "", "SQL92")
    assert build_subscription("T", "a > 1", "SQL92").expression_type == "SQL92"
