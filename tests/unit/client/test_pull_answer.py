"""What a pull answer becomes before the consumer sees it: decoded, inflated, re-checked
against the subscription's tag strings, MIN_OFFSET / MAX_OFFSET on every message; and the
consume-time touches (retry topics restored, consume start stamped)."""

from __future__ import annotations

import zlib

from orbitmq.client.consume_service import mark_consume_start, restore_retry_topic
from orbitmq.client.mq_client_api import MQClientAPI
from orbitmq.client.pull_result import PullStatus
from orbitmq.common import MessageExt, encode_message
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.filter import build_subscription_data
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.header import PullMessageRequestHeader, PullMessageResponseHeader
from orbitmq.remoting import RemotingClient


class AnsweringRemoting:
    """Answers every request with one canned response."""

    def __init__(self, response: RemotingCommand) -> None:
        self.response = response

    async def invoke(
        self, addr: str, request: RemotingCommand, timeout_s: float
    ) -> RemotingCommand:
        del addr, timeout_s
        return RemotingCommand.create_response(
            request,
            self.response.code,
            ext_fields=self.response.ext_fields,
            body=self.response.body,
        )


def stored(offset: int, tags: str | None, body: bytes = b"body", sys_flag: int = 0) -> bytes:
    properties = {"UNIQ_KEY": f"ID{offset}"}
    if tags is not None:
        properties[mc.PROPERTY_TAGS] = tags
    return encode_message(
        MessageExt(
            topic="T",
            body=body,
            properties=properties,
            queue_offset=offset,
            commit_log_offset=100 * offset,
            sys_flag=sys_flag,
            born_host=("127.0.0.1", 1),
            store_host=("127.0.0.1", 10911),
        )
    )


def api_answering(body: bytes, code: int = ResponseCode.SUCCESS) -> MQClientAPI:
    header = PullMessageResponseHeader(
        suggest_which_broker_id=0, next_begin_offset=9, min_offset=2, max_offset=40
    )
    response = RemotingCommand(code, ext_fields=header.to_ext_fields(), body=body)
    remoting: RemotingClient = AnsweringRemoting(response)  # type: ignore[assignment]
    return MQClientAPI(remoting)


def request() -> PullMessageRequestHeader:
    return PullMessageRequestHeader(
        consumer_group="g",
        topic="T",
        queue_id=0,
        queue_offset=5,
        max_msg_nums=32,
        sys_flag=0,
        commit_offset=0,
        suspend_timeout_millis=0,
        sub_version=0,
    )


BODY = b"".join(
    [
        stored(5, "TagA"),
        stored(6, "TagB"),
        stored(7, None),
        stored(8, "TagA", zlib.compress(b"inflated"), sf.COMPRESSED_FLAG),
    ]
)


async def test_found_messages_are_filtered_by_tag_and_given_the_queue_bounds() -> None:
    api = api_answering(BODY)
    result = await api.pull_message("b:1", request(), build_subscription_data("T", "TagA"), 3.0)
    assert result.pull_status is PullStatus.FOUND
    assert (result.next_begin_offset, result.min_offset, result.max_offset) == (9, 2, 40)
    assert [m.queue_offset for m in result.messages] == [5, 8]
    assert result.messages[1].body == b"inflated"
    assert not result.messages[1].sys_flag & sf.COMPRESSED_FLAG
    for m in result.messages:
        assert list(m.properties) == ["UNIQ_KEY", "TAGS", "MIN_OFFSET", "MAX_OFFSET"]
        assert (m.properties["MIN_OFFSET"], m.properties["MAX_OFFSET"]) == ("2", "40")


async def test_every_message_is_kept_without_a_tag_filter() -> None:
    api = api_answering(BODY)
    for subscription in (None, build_subscription_data("T", "*")):
        result = await api.pull_message("b:1", request(), subscription, 3.0)
        assert [m.queue_offset for m in result.messages] == [5, 6, 7, 8]
        assert all(m.properties[mc.PROPERTY_MAX_OFFSET] == "40" for m in result.messages)


async def test_answers_without_messages_decode_nothing() -> None:
    api = api_answering(b"", ResponseCode.PULL_NOT_FOUND)
    result = await api.pull_message("b:1", request(), None, 3.0)
    assert result.pull_status is PullStatus.NO_NEW_MSG
    assert result.messages == []


def test_only_redelivered_messages_get_their_topic_back() -> None:
    retried = MessageExt(topic="%RETRY%g", properties={mc.PROPERTY_RETRY_TOPIC: "T"})
    no_origin = MessageExt(topic="%RETRY%g")
    other_group = MessageExt(topic="%RETRY%h", properties={mc.PROPERTY_RETRY_TOPIC: "T"})
    plain = MessageExt(topic="T", properties={mc.PROPERTY_RETRY_TOPIC: "X"})
    restore_retry_topic([retried, no_origin, other_group, plain], "g")
    assert [m.topic for m in (retried, no_origin, other_group, plain)] == [
        "T",
        "%RETRY%g",
        "%RETRY%h",
        "T",
    ]
    restore_retry_topic([plain], "g")  # a batch without retries is left alone
    assert plain.topic == "T"


def test_consume_start_is_stamped_on_every_message() -> None:
    batch = [MessageExt(topic="T"), MessageExt(topic="T", properties={"a": "b"})]
    mark_consume_start(batch, 1_700_000_000_123)
    stamps = {m.properties[mc.PROPERTY_CONSUME_START_TIMESTAMP] for m in batch}
    assert stamps == {"1700000000123"}
