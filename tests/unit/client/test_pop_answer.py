"""What a POP answer becomes before the simple consumer hands it out: each message with its
receipt handle (the extra info RocketMQ 5's client builds from the answer's offset infos),
its first pop time and, for FIFO POP, its delivery count; and the ACK / CHANGE answers. Also
the simple consumer's checks of its arguments, which need no broker."""

from __future__ import annotations

import pytest

from orbitmq.client import MessageView, SimpleConsumer, SimpleConsumerConfig, sql
from orbitmq.client.errors import MQBrokerError, MQClientError
from orbitmq.client.pop_api import PopAPI, PopStatus
from orbitmq.common import MessageExt, encode_message
from orbitmq.common import message_const as mc
from orbitmq.protocol import RemotingCommand, ResponseCode
from orbitmq.protocol.header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from orbitmq.protocol.pop_extra_info import ExtraInfo
from orbitmq.remoting import RemotingClient
from tests.unit.client.test_pull_answer import AnsweringRemoting


def stored(topic: str, queue_id: int, offset: int) -> bytes:
    return encode_message(
        MessageExt(
            topic=topic,
            body=f"m{offset}".encode(),
            properties={"UNIQ_KEY": f"ID{offset}"},
            queue_id=queue_id,
            queue_offset=offset,
            commit_log_offset=100 * offset,
            born_host=("127.0.0.1", 1),
            store_host=("127.0.0.1", 10911),
        )
    )


def pop_header(order: bool = False) -> PopMessageRequestHeader:
    return PopMessageRequestHeader(
        consumer_group="g",
        topic="T",
        queue_id=-1,
        max_msg_nums=8,
        invisible_time=30_000,
        poll_time=0,
        born_time=1,
        init_mode=1,
        order=order,
    )


def api(code: int, ext_fields: dict[str, str], body: bytes = b"") -> PopAPI:
    response = RemotingCommand(code=code, ext_fields=ext_fields, body=body)
    remoting: RemotingClient = AnsweringRemoting(response)  # type: ignore[assignment]
    return PopAPI(remoting)


POP_ANSWER = PopMessageResponseHeader(
    pop_time=1_700_000_000_000,
    invisible_time=30_000,
    revive_qid=3,
    rest_num=5,
    # Queue 1 of T from offset 7; queue 0 of the group's POP retry topic from offset 2.
    start_offset_info="0 1 7;1 0 2",
    msg_offset_info="0 1 7,8;1 0 2",
)


async def test_each_message_gets_its_receipt_handle_and_shows_the_topic_popped() -> None:
    body = stored("T", 1, 7) + stored("T", 1, 8) + stored("%RETRY%g_T", 0, 2)
    result = await api(0, POP_ANSWER.to_ext_fields(), body).pop_message(
        "a:1", "broker-a", pop_header(), 3.0
    )
    assert (result.status, result.rest_num, result.invisible_time) == (PopStatus.FOUND, 5, 30_000)
    handles = [m.properties[mc.PROPERTY_POP_CK] for m in result.messages]
    assert handles == [
        "7 1700000000000 30000 3 0 broker-a 1 7",
        "7 1700000000000 30000 3 0 broker-a 1 8",
        # A retried message: retry mark 1, so an ack goes to the retry topic.
        "2 1700000000000 30000 3 1 broker-a 0 2",
    ]
    assert [m.topic for m in result.messages] == ["T", "T", "T"]
    assert ExtraInfo.parse(handles[2]).real_topic("T", "g") == "%RETRY%g_T"
    assert {m.properties[mc.PROPERTY_FIRST_POP_TIME] for m in result.messages} == {"1700000000000"}


async def test_fifo_pop_counts_deliveries_from_the_order_count_info() -> None:
    answer = PopMessageResponseHeader(
        pop_time=5,
        invisible_time=10_000,
        revive_qid=999,
        rest_num=0,
        start_offset_info="0 1 7",
        msg_offset_info="0 1 7,8",
        order_count_info="0 qo1%7 2;0 qo1%8 0",
    )
    body = stored("T", 1, 7) + stored("T", 1, 8)
    result = await api(0, answer.to_ext_fields(), body).pop_message(
        "a:1", "broker-a", pop_header(order=True), 3.0
    )
    assert [m.reconsume_times for m in result.messages] == [2, 0]
    assert ExtraInfo.parse(result.messages[0].properties[mc.PROPERTY_POP_CK]).is_order


@pytest.mark.parametrize(
    ("code", "status"),
    [
        (ResponseCode.POLLING_TIMEOUT, PopStatus.POLLING_NOT_FOUND),
        (ResponseCode.PULL_NOT_FOUND, PopStatus.POLLING_NOT_FOUND),
        (ResponseCode.POLLING_FULL, PopStatus.POLLING_FULL),
    ],
)
async def test_nothing_found_is_a_status_not_an_error(code: int, status: PopStatus) -> None:
    result = await api(code, {"restNum": "0"}).pop_message("a:1", "broker-a", pop_header(), 3.0)
    assert (result.status, result.messages) == (status, [])


async def test_a_refused_pop_raises_the_brokers_answer() -> None:
    with pytest.raises(MQBrokerError) as raised:
        await api(ResponseCode.INVALID_PARAMETER, {}).pop_message(
            "a:1", "broker-a", pop_header(), 3.0
        )
    assert raised.value.code == ResponseCode.INVALID_PARAMETER


async def test_a_broker_without_pop_is_named_with_the_fix() -> None:
    with pytest.raises(MQBrokerError, match=r"broker-a \(a:1\) does not serve POP_MESSAGE: a Rock"):
        await api(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, {}).pop_message(
            "a:1", "broker-a", pop_header(), 3.0
        )


async def test_an_answer_without_the_queues_start_offset_is_refused_clearly() -> None:
    answer = PopMessageResponseHeader(
        pop_time=5, invisible_time=1, revive_qid=0, rest_num=0, start_offset_info="0 2 7"
    )
    with pytest.raises(MQClientError, match="has no entry for 0@1"):
        await api(0, answer.to_ext_fields(), stored("T", 1, 7)).pop_message(
            "a:1", "broker-a", pop_header(), 3.0
        )


async def test_change_builds_the_new_handle_and_a_refused_ack_raises() -> None:
    handle = ExtraInfo.parse("7 1000 30000 3 0 broker-a 1 8")
    header = ChangeInvisibleTimeRequestHeader(
        consumer_group="g",
        topic="T",
        queue_id=1,
        extra_info=str(handle),
        offset=8,
        invisible_time=5000,
    )
    answer = ChangeInvisibleTimeResponseHeader(pop_time=2000, invisible_time=5000, revive_qid=4)
    changed = await api(0, answer.to_ext_fields()).change_invisible_time("a:1", header, handle, 3.0)
    assert str(changed) == "8 2000 5000 4 0 broker-a 1 8"
    ack = AckMessageRequestHeader(
        consumer_group="g", topic="T", queue_id=1, extra_info=str(handle), offset=8
    )
    with pytest.raises(MQBrokerError) as raised:
        await api(ResponseCode.NO_MESSAGE, {}).ack_message("a:1", ack, 3.0)
    assert raised.value.code == ResponseCode.NO_MESSAGE


async def test_the_simple_consumer_names_the_field_the_value_and_the_limit() -> None:
    with pytest.raises(MQClientError, match="consumer group is empty"):
        SimpleConsumer("")
    with pytest.raises(MQClientError, match="await_duration_s: -1 is negative"):
        SimpleConsumer("g", config=SimpleConsumerConfig(await_duration_s=-1))
    with pytest.raises(MQClientError, match="topic: topic name 'a b' has characters"):
        SimpleConsumer("g", subscription_expressions={"a b": "*"})
    consumer = SimpleConsumer("g", namesrv_addr="127.0.0.1:1")
    with pytest.raises(MQClientError, match="max_message_num: 33 is not between 1 and 32"):
        await consumer.receive(33, 30)
    with pytest.raises(MQClientError, match="max_message_num: 0 is not between 1 and 32"):
        await consumer.receive(0, 30)
    with pytest.raises(
        MQClientError, match="invisible_duration_s: 5 is not between 10 and 43200 seconds"
    ):
        await consumer.receive(1, 5)
    with pytest.raises(MQClientError, match="is not started: start"):
        await consumer.receive(1, 30)
    view = MessageView(MessageExt(topic="T"), "broker-a", "forged")
    with pytest.raises(MQClientError, match="receipt_handle: extraInfo 'forged' has 1 fields"):
        await consumer.ack(view)
    with pytest.raises(
        MQClientError, match="invisible_duration_s: 50000 is not between 0 and 43200 seconds"
    ):
        await consumer.change_invisible_duration(view, 50_000)


def test_subscriptions_take_tags_and_sql_and_refuse_bad_sql() -> None:
    consumer = SimpleConsumer("g", subscription_expressions={"A": "TagA || TagB"})
    consumer.unsubscribe("missing")  # no error, as RocketMQ
    assert consumer.subscription_expressions["A"].expression == "TagA || TagB"
    assert consumer.subscribed_topics() == {"A"}
    data = consumer.consumer_data()
    assert data.consume_type is not None and data.consume_type.name == "CONSUME_POP"
    assert [s.sub_string for s in data.subscription_data_set] == ["TagA || TagB"]
    with pytest.raises(Exception, match="line 1"):
        sql("amount >")
