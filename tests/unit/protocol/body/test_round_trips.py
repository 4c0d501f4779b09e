"""Random bodies survive our writer, and fastjson's way of writing them, unchanged."""

from __future__ import annotations

import random
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from orbitmq.common import MessageQueue
from orbitmq.protocol.body import (
    Body,
    BrokerData,
    ClusterInfo,
    ConsumeFromWhere,
    ConsumerData,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeType,
    HeartbeatData,
    LockBatchRequestBody,
    MessageModel,
    OffsetWrapper,
    ProducerData,
    QueueData,
    SubscriptionData,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicFilterType,
    TopicRouteData,
)
from tests.unit.protocol.body.fastjson_style import ObjectKey, fastjson_dumps

NAMES = st.text(alphabet='ab1:{}"\\%@# é', max_size=8)
INTS = st.integers(-(2**63), 2**63 - 1)
QUEUES = st.builds(MessageQueue, NAMES, NAMES, st.integers(0, 2**31 - 1))
BROKERS = st.builds(BrokerData, NAMES, NAMES, st.dictionaries(st.integers(0, 2**63 - 1), NAMES))

BODIES: st.SearchStrategy[Body] = st.one_of(
    st.builds(
        TopicRouteData,
        st.none() | NAMES,
        st.lists(st.builds(QueueData, NAMES, INTS, INTS, INTS, INTS), max_size=3),
        st.lists(BROKERS, max_size=3),
        st.dictionaries(NAMES, st.lists(NAMES, max_size=2), max_size=2),
    ),
    st.builds(
        ClusterInfo,
        st.dictionaries(NAMES, BROKERS, max_size=3),
        st.dictionaries(NAMES, st.sets(NAMES, max_size=3), max_size=3),
    ),
    st.builds(
        HeartbeatData,
        NAMES,
        st.lists(st.builds(ProducerData, NAMES), max_size=2),
        st.lists(
            st.builds(
                ConsumerData,
                NAMES,
                st.none() | st.sampled_from(ConsumeType),
                st.none() | st.sampled_from(MessageModel),
                st.none() | st.sampled_from(ConsumeFromWhere),
                st.lists(
                    st.builds(
                        SubscriptionData,
                        st.booleans(),
                        NAMES,
                        NAMES,
                        st.sets(NAMES, max_size=3),
                        st.sets(st.integers(-(2**31), 2**31 - 1), max_size=3),
                        INTS,
                        st.sampled_from(["TAG", "SQL92"]),
                    ),
                    max_size=3,
                ),
                st.booleans(),
            ),
            max_size=2,
        ),
    ),
    st.builds(
        ConsumerOffsetSerializeWrapper,
        st.dictionaries(NAMES, st.dictionaries(st.integers(0, 2**31 - 1), INTS, max_size=4)),
    ),
    st.builds(
        ConsumeStats,
        st.dictionaries(QUEUES, st.builds(OffsetWrapper, INTS, INTS, INTS), max_size=4),
        st.floats(allow_nan=False, allow_infinity=False),
    ),
    st.builds(LockBatchRequestBody, NAMES, NAMES, st.sets(QUEUES, max_size=4)),
    st.builds(
        TopicConfigSerializeWrapper,
        st.dictionaries(
            NAMES,
            st.builds(
                TopicConfig,
                NAMES,
                INTS,
                INTS,
                INTS,
                st.sampled_from(TopicFilterType),
                INTS,
                st.booleans(),
            ),
            max_size=3,
        ),
    ),
)


def _key(key: str) -> str | ObjectKey:
    if key.startswith('{"brokerName":'):
        parsed = orjson.loads(key)
        if sorted(parsed) == ["brokerName", "queueId", "topic"]:
            return ObjectKey.of(parsed)
    return key


def _as_fastjson_sees_it(value: Any) -> Any:
    """Our written form with every MessageQueue key back to an object, as fastjson has it."""
    if isinstance(value, dict):
        return {_key(k): _as_fastjson_sees_it(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_fastjson_sees_it(v) for v in value]
    return value


@settings(max_examples=80, deadline=None)
@given(BODIES, st.randoms(use_true_random=False))
def test_bodies_round_trip_through_standard_and_fastjson_text(
    body: Body, rnd: random.Random
) -> None:
    cls = type(body)
    assert cls.from_json(body.to_json()) == body
    fastjson = fastjson_dumps(_as_fastjson_sees_it(body.to_value()), rnd)
    assert cls.from_json(fastjson.encode()) == body
