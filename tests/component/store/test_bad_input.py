"""Bad input and an unavailable store: a status naming the problem, and nothing written."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from orbitmq.common import Message, MessageExtBatch, MessageExtBrokerInner, encode_batch_messages
from orbitmq.common import message_const as mc
from orbitmq.store import BrokerRole, MessageStore, PutMessageResult, PutMessageStatus
from tests.component.store.records import list_files
from tests.conftest import StoreFactory
from tests.support import make_message


def _batch(body: bytes, **properties: str) -> MessageExtBatch:
    return MessageExtBatch(
        topic="TopicTest",
        body=body,
        properties=dict(properties),
        born_timestamp=1_700_000_000_000,
        born_host=("10.1.2.3", 52000),
    )


def _good_batch_body(count: int = 3) -> bytes:
    return encode_batch_messages(Message("TopicTest", f"b{i}".encode()) for i in range(count))


def _snapshot(store: MessageStore) -> tuple[int, list[str], list[str], list[str]]:
    config = store.config
    queues = []
    if os.path.isdir(config.consume_queue_dir):
        for root, _dirs, files in os.walk(config.consume_queue_dir):
            queues += [os.path.join(root, f) for f in files]
    return (
        store.max_phy_offset,
        list_files(config.commit_log_dir),
        sorted(queues),
        list_files(config.index_dir),
    )


@pytest.fixture(params=["empty", "after_a_message"])
def store(request: pytest.FixtureRequest, store_factory: StoreFactory) -> Iterator[MessageStore]:
    """A store that never got a message (so no file exists yet), or one that got one."""
    made = store_factory(max_message_size=2048)
    if request.param == "after_a_message":
        assert made.put_message(make_message(keys="first")).is_ok
        assert made.wait_for_dispatch()
    yield made


def _assert_refused(
    store: MessageStore, msg: MessageExtBrokerInner, status: PutMessageStatus
) -> PutMessageResult:
    before = _snapshot(store)
    result = store.put_message(msg)
    assert result.status is status, result.remark
    assert not result.is_ok
    assert result.append_result is None
    assert result.remark
    assert store.wait_for_dispatch()
    assert _snapshot(store) == before
    return result


def test_message_over_max_message_size_is_illegal(store: MessageStore) -> None:
    result = _assert_refused(
        store, make_message(body=b"x" * 2048), PutMessageStatus.MESSAGE_ILLEGAL
    )
    assert "maxMessageSize" in result.remark
    assert "2048" in result.remark
    # Just under the limit is fine.
    assert store.put_message(make_message(body=b"x" * 1500)).status is PutMessageStatus.PUT_OK


def test_topic_of_128_characters_is_illegal(store: MessageStore) -> None:
    result = _assert_refused(store, make_message("a" * 128), PutMessageStatus.MESSAGE_ILLEGAL)
    assert "topic" in result.remark
    assert "128" in result.remark
    assert "127" in result.remark
    assert store.put_message(make_message("a" * 127)).status is PutMessageStatus.PUT_OK


@pytest.mark.parametrize(("topic", "bad"), [("a b", " "), ("topic/x", "/"), ("t.x", ".")])
def test_topic_with_a_character_outside_the_allowed_set_is_illegal(
    store: MessageStore, topic: str, bad: str
) -> None:
    result = _assert_refused(store, make_message(topic), PutMessageStatus.MESSAGE_ILLEGAL)
    assert topic in result.remark
    assert repr(bad) in result.remark


def test_empty_topic_is_illegal(store: MessageStore) -> None:
    result = _assert_refused(store, make_message(""), PutMessageStatus.MESSAGE_ILLEGAL)
    assert "empty" in result.remark


def test_properties_over_32767_bytes_are_refused(store: MessageStore) -> None:
    msg = make_message(properties={"big": "v" * 32767})
    result = _assert_refused(store, msg, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)
    assert "32767" in result.remark
    assert "properties" in result.remark


def test_batch_properties_over_the_limit_are_refused(store: MessageStore) -> None:
    result = _assert_refused(
        store,
        _batch(_good_batch_body(), big="v" * 33000),
        PutMessageStatus.PROPERTIES_SIZE_EXCEEDED,
    )
    assert "32767" in result.remark


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"\x00\x00\x00\x10garbage", id="garbage"),
        pytest.param(_good_batch_body()[:-1], id="truncated"),
        pytest.param(_good_batch_body() + b"\x00\x00", id="trailing-bytes"),
        pytest.param(b"", id="empty"),
        pytest.param(
            # TOTALSIZE says 100, the item is 22 bytes long.
            b"\x00\x00\x00\x64" + b"\x00" * 12 + b"\x00\x00\x00\x02" + b"hi" + b"\x00\x00",
            id="wrong-total",
        ),
    ],
)
def test_malformed_batch_body_is_illegal(store: MessageStore, body: bytes) -> None:
    _assert_refused(store, _batch(body), PutMessageStatus.MESSAGE_ILLEGAL)


def test_batch_item_over_max_message_size_is_illegal(store: MessageStore) -> None:
    body = encode_batch_messages([Message("TopicTest", b"ok"), Message("TopicTest", b"y" * 3000)])
    result = _assert_refused(store, _batch(body), PutMessageStatus.MESSAGE_ILLEGAL)
    assert "maxMessageSize" in result.remark


def test_batch_with_a_delay_level_is_illegal(store: MessageStore) -> None:
    batch = _batch(_good_batch_body(), **{mc.PROPERTY_DELAY_TIME_LEVEL: "3"})
    result = _assert_refused(store, batch, PutMessageStatus.MESSAGE_ILLEGAL)
    assert "delay" in result.remark


def test_a_shut_down_store_refuses_puts(store_factory: StoreFactory) -> None:
    store = store_factory()
    assert store.put_message(make_message()).is_ok
    store.shutdown()
    before = store.max_phy_offset
    result = store.put_message(make_message())
    assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "shut down" in result.remark
    batch = store.put_messages(_batch(_good_batch_body()))
    assert batch.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert store.max_phy_offset == before


def test_a_slave_refuses_puts(store_factory: StoreFactory) -> None:
    store = store_factory(broker_role=BrokerRole.SLAVE)
    result = store.put_message(make_message())
    assert result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE
    assert "slave" in result.remark
    assert store.max_phy_offset == 0
    assert list_files(store.config.commit_log_dir) == []


async def test_async_put_reports_the_same_problems(store: MessageStore) -> None:
    before = _snapshot(store)
    result = await store.async_put_message(make_message("a b"))
    assert result.status is PutMessageStatus.MESSAGE_ILLEGAL
    result = await store.async_put_message(make_message(body=b"x" * 4000))
    assert result.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert "maxMessageSize" in result.remark
    assert _snapshot(store) == before
