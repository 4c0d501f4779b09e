"""Each blocking facade (``orbitmq.sync``) offers every public method and property of its
asyncio client with the same parameters (names, kinds, defaults), and nothing else but
what the lists below allow, each with its reason: the two drift apart otherwise."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from orbitmq import client, sync

PAIRS = [
    (client.Producer, sync.Producer),
    (client.PushConsumer, sync.PushConsumer),
    (client.LitePullConsumer, sync.LitePullConsumer),
    (client.AdminClient, sync.AdminClient),
    (client.QueueReader, sync.QueueReader),
    (client.TransactionProducer, sync.TransactionProducer),
    (client.SimpleConsumer, sync.SimpleConsumer),
]

_CONSUMER_INNER = (
    "the client instance's calls into its consumer (RocketMQ's MQConsumerInner), made on "
    "the loop by the instance itself, not by users"
)
_CLOCK = "the clock the asyncio consumer was built with (a test seam; facades keep the system one)"
_CONSUME_TYPE = "the kind the heartbeat reports (RocketMQ's consumeType()): a class constant"
_POLL_HOOKS = (
    "runs the consume hooks around each poll (RocketMQ's executeHookBefore/After), called by "
    "the consumer itself on the loop, not by users"
)
_ATTRIBUTE = "an attribute of the asyncio client's instances (set in __init__)"

#: Async members without a blocking counterpart.
ASYNC_ONLY: dict[type, dict[str, str]] = {
    client.PushConsumer: dict.fromkeys(
        [
            "after_consume",
            "before_consume",
            "clean_expired_messages",
            "compute_pull_from_where",
            "consume_message_directly",
            "consumer_data",
            "consumer_running_info",
            "lock_all",
            "reset_offset",
            "unlock_all",
            "update_topic_subscribe_info",
        ],
        _CONSUMER_INNER,
    )
    | {"CONSUME_TYPE": _CONSUME_TYPE, "clock": _CLOCK},
    client.LitePullConsumer: dict.fromkeys(
        [
            "compute_pull_from_where",
            "consumer_data",
            "consumer_running_info",
            "update_topic_subscribe_info",
        ],
        _CONSUMER_INNER,
    )
    | dict.fromkeys(["after_consume", "before_consume"], _POLL_HOOKS)
    | {"CONSUME_TYPE": _CONSUME_TYPE, "clock": _CLOCK},
    client.SimpleConsumer: dict.fromkeys(
        ["consumer_data", "rebalance_now", "subscribed_topics", "update_topic_subscribe_info"],
        _CONSUMER_INNER,
    )
    | {"CONSUME_TYPE": _CONSUME_TYPE},
    client.TransactionProducer: {
        "check_transaction_state": "the client instance's call into its producer when a "
        "broker checks a half (RocketMQ's MQProducerInner), made on the loop, not by users"
    },
}

#: Blocking members without an async counterpart.
SYNC_ONLY: dict[type, dict[str, str]] = {
    sync.Producer: {
        "group": _ATTRIBUTE,
        "config": _ATTRIBUTE,
        "send_async": "RocketMQ's send(msg, SendCallback): an asyncio caller creates a task",
        "send_half_async": "send_half started without waiting, as send_async",
    },
    sync.TransactionProducer: {
        "group": _ATTRIBUTE,
        "config": _ATTRIBUTE,
        "send_async": "inherited from the blocking Producer: see its entry",
        "send_half_async": "inherited from the blocking Producer: see its entry",
    },
    sync.PushConsumer: {"group": _ATTRIBUTE, "config": _ATTRIBUTE},
    sync.LitePullConsumer: {"group": _ATTRIBUTE, "config": _ATTRIBUTE},
    sync.SimpleConsumer: {"group": _ATTRIBUTE, "config": _ATTRIBUTE},
    sync.QueueReader: {
        "read_raw": "pulls over a blocking socket of the calling thread: blocking code only"
    },
}

#: Constructor parameters on one side only.
INIT_ASYNC_ONLY = {
    "instance": "an MQClientInstance runs on its event loop; a facade's client owns its own",
    "clock": "the test seam of the asyncio client (deadlines on a ManualClock); facades keep "
    "the system clock",
}
INIT_SYNC_ONLY = {"call_timeout_s": "how long the facade waits for a call on its loop"}
#: A blocking method may bound its wait with a trailing keyword-only parameter of this name.
WAIT_BOUND = "timeout_s"


def public_members(cls: type) -> dict[str, Any]:
    return {n: inspect.getattr_static(cls, n) for n in dir(cls) if not n.startswith("_")}


def parameters(function: Any) -> list[tuple[str, Any, Any]]:
    """(name, kind, default) of each parameter but self."""
    return [
        (p.name, p.kind, p.default)
        for p in inspect.signature(function).parameters.values()
        if p.name != "self"
    ]


def ids(pair: tuple[type, type]) -> str:
    return pair[0].__name__


@pytest.mark.parametrize("pair", PAIRS, ids=ids)
def test_every_async_member_has_a_blocking_twin_and_the_reverse(pair: tuple[type, type]) -> None:
    async_cls, sync_cls = pair
    async_members, sync_members = public_members(async_cls), public_members(sync_cls)
    async_only = set(async_members) - set(sync_members)
    sync_only = set(sync_members) - set(async_members)
    assert async_only == set(ASYNC_ONLY.get(async_cls, {})), "async only"
    assert sync_only == set(SYNC_ONLY.get(sync_cls, {})), "blocking only"


@pytest.mark.parametrize("pair", PAIRS, ids=ids)
def test_twins_take_the_same_parameters(pair: tuple[type, type]) -> None:
    async_cls, sync_cls = pair
    sync_members = public_members(sync_cls)
    for name, member in public_members(async_cls).items():
        twin = sync_members.get(name)
        if twin is None:
            continue
        assert isinstance(twin, property) == isinstance(member, property), name
        if isinstance(member, property):
            continue
        expected = parameters(member)
        got = parameters(twin)
        bounded = got and got[-1][:2] == (WAIT_BOUND, inspect.Parameter.KEYWORD_ONLY)
        if bounded and WAIT_BOUND not in {p[0] for p in expected}:
            got = got[:-1]
        assert got == expected, f"{sync_cls.__name__}.{name}"


@pytest.mark.parametrize("pair", PAIRS, ids=ids)
def test_constructors_take_the_same_parameters(pair: tuple[type, type]) -> None:
    async_cls, sync_cls = pair
    expected = [
        p
        for p in parameters(inspect.getattr_static(async_cls, "__init__"))
        if p[0] not in INIT_ASYNC_ONLY
    ]
    got = [
        p
        for p in parameters(inspect.getattr_static(sync_cls, "__init__"))
        if p[0] not in INIT_SYNC_ONLY
    ]
    assert got == expected
