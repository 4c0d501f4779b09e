"""ConsumerFilterManager: which heartbeat subscriptions register, replace or remove a
group's compiled SQL92 filter of a topic."""

from __future__ import annotations

import pytest

from orbitmq.broker.consumer_filter_manager import (
    ConsumerFilterManager,
    build_consumer_filter_data,
)
from orbitmq.filter import (
    Sql92ParseError,
    SubscriptionData,
    SubscriptionParseError,
    build_subscription,
)


def sql(topic: str, expression: str, version: int) -> SubscriptionData:
    return build_subscription(topic, expression, "SQL92", version)


def test_register_replace_and_remove() -> None:
    manager = ConsumerFilterManager()
    manager.register("g", [sql("T", "a = 1", 10), build_subscription("U", "TagA", "TAG", 10)])
    registered = manager.get("T", "g")
    assert registered is not None and registered.expression == "a = 1"
    assert registered.client_version == 10
    assert manager.get("U", "g") is None
    assert manager.get("T", "other") is None

    # The same expression and version again: the compiled filter is kept as it is.
    manager.register("g", [sql("T", "a = 1", 10)])
    assert manager.get("T", "g") is registered
    # A newer version, or another expression, replaces it.
    manager.register("g", [sql("T", "a = 2", 9)])
    replaced = manager.get_expression("T", "g")
    assert replaced is not None and replaced.matches({"a": "2"})
    # The group now subscribes the topic by tag: its SQL92 filter goes.
    manager.register("g", [build_subscription("T", "*", "TAG", 11)])
    assert manager.get("T", "g") is None


def test_an_expression_that_does_not_compile_is_not_registered() -> None:
    manager = ConsumerFilterManager()
    manager.register("g", [sql("T", "a = = 1", 10)])
    assert manager.get("T", "g") is None


def test_build_refuses_a_bad_expression_with_its_position_and_an_unknown_type() -> None:
    with pytest.raises(Sql92ParseError) as caught:
        build_consumer_filter_data("T", "g", "a >", "SQL92", 1)
    assert (caught.value.line, caught.value.column) == (1, 4)
    with pytest.raises(SubscriptionParseError, match="unknown expression type 'CLASS'"):
        build_consumer_filter_data("T", "g", "a", "CLASS", 1)
