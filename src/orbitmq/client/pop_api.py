"""``PopAPI``: the client's POP requests (RocketMQ 5's ``MQClientAPIImpl.popMessageAsync``,
``ackMessageAsync``, ``changeInvisibleTimeAsync`` and ``processPopResponse``), typed.

A POP answer carries, per queue, where the broker's check point starts and which offsets it
handed out; each message gets its receipt handle from them (the extra info string, kept in
its ``POP_CK`` property as RocketMQ's client keeps it), which ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME send back. Nothing here retries or chooses a broker.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from orbitmq.client.errors import MQBrokerError, MQClientError
from orbitmq.client.mq_client_api import decode_client_messages
from orbitmq.common import MessageExt
from orbitmq.common import message_const as mc
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import BodyError, loads_body
from orbitmq.protocol.header import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from orbitmq.protocol.pop_extra_info import (
    ExtraInfo,
    ExtraInfoError,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    queue_key,
    queue_offset_key,
)
from orbitmq.remoting import RemotingClient


class PopStatus(enum.Enum):
    """RocketMQ's ``PopStatus``: what a POP found."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    #: The broker holds too many long polls already.
    POLLING_FULL = "POLLING_FULL"
    #: The long poll ended with nothing.
    POLLING_NOT_FOUND = "POLLING_NOT_FOUND"


#: POP answers (``processPopResponse``); any other code is an error.
_POP_STATUS: Final[dict[int, PopStatus]] = {
    ResponseCode.SUCCESS: PopStatus.FOUND,
    ResponseCode.POLLING_FULL: PopStatus.POLLING_FULL,
    ResponseCode.POLLING_TIMEOUT: PopStatus.POLLING_NOT_FOUND,
    ResponseCode.PULL_NOT_FOUND: PopStatus.POLLING_NOT_FOUND,
}


@dataclass(slots=True)
class PopResult:
    """A POP's status, its messages (each with its receipt handle in ``POP_CK``), when they
    were popped and for how long (ms) they are invisible, and how many remain. Plain data,
    owned by its caller."""

    status: PopStatus
    messages: list[MessageExt] = field(default_factory=list)
    pop_time: int = 0
    invisible_time: int = 0
    rest_num: int = 0


def receipt_handle_of(msg: MessageExt) -> str:
    """The receipt handle (extra info) a POP gave ``msg``; MQClientError when it has none."""
    handle = msg.properties.get(mc.PROPERTY_POP_CK)
    if not handle:
        raise MQClientError(f"message {msg.msg_id} has no receipt handle: it was not popped")
    return handle


class PopAPI:
    """Owns nothing but the shared ``RemotingClient``; every method is one request. Use from
    the client's event loop."""

    def __init__(self, remoting: RemotingClient) -> None:
        self.remoting = remoting

    async def pop_message(
        self, addr: str, broker_name: str, header: PopMessageRequestHeader, timeout_s: float
    ) -> PopResult:
        """POP_MESSAGE (200050) to the broker ``broker_name`` at ``addr``."""
        request = RemotingCommand.create_request(RequestCode.POP_MESSAGE, header.to_ext_fields())
        response = await self.remoting.invoke(addr, request, timeout_s)
        status = _POP_STATUS.get(response.code)
        if status is None:
            if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
                # The address came from the topic's route: a broker, one without POP.
                error = MQBrokerError(response.code, response.remark, addr)
                error.args = (
                    f"broker {broker_name} ({addr}) does not serve POP_MESSAGE: a RocketMQ 4.x"
                    " broker cannot serve a SimpleConsumer (a 5.x one or OrbitMQ's can); use a"
                    " push or lite pull consumer with it",
                )
                raise error
            raise MQBrokerError.for_response(response, addr, RequestCode.POP_MESSAGE)
        if status is not PopStatus.FOUND:
            rest = response.ext_fields.get("restNum", "0")
            return PopResult(status, rest_num=int(rest) if rest.isdigit() else 0)
        answer = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
        messages = decode_client_messages(response.body)
        try:
            _set_receipt_handles(messages, broker_name, header, answer)
        except ExtraInfoError as exc:
            raise MQClientError(
                f"broker {addr} answered a POP the client cannot read: {exc}"
            ) from exc
        return PopResult(status, messages, answer.pop_time, answer.invisible_time, answer.rest_num)

    async def ack_message(
        self, addr: str, header: AckMessageRequestHeader, timeout_s: float
    ) -> None:
        """ACK_MESSAGE (200051); MQBrokerError when the broker refuses it (an expired or
        unknown receipt handle)."""
        request = RemotingCommand.create_request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
        response = await self.remoting.invoke(addr, request, timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(response, addr, RequestCode.ACK_MESSAGE)

    async def change_invisible_time(
        self,
        addr: str,
        header: ChangeInvisibleTimeRequestHeader,
        handle: ExtraInfo,
        timeout_s: float,
    ) -> ExtraInfo:
        """CHANGE_MESSAGE_INVISIBLETIME (200053); the message's new receipt handle, built as
        RocketMQ's client builds it from the answer."""
        request = RemotingCommand.create_request(
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields()
        )
        response = await self.remoting.invoke(addr, request, timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(
                response, addr, RequestCode.CHANGE_MESSAGE_INVISIBLETIME
            )
        answer = ChangeInvisibleTimeResponseHeader.from_ext_fields(response.ext_fields)
        return handle.changed(
            header.offset, answer.pop_time, answer.invisible_time, answer.revive_qid
        )

    async def group_consumes_orderly(self, addr: str, group: str, timeout_s: float) -> bool:
        """Whether the broker at ``addr`` has ``group`` as a FIFO group (its subscription
        group config's ``consumeMessageOrderly``, RocketMQ 5), read from the broker's group
        table (GET_ALL_SUBSCRIPTIONGROUP_CONFIG, 201); False when it has no such group."""
        request = RemotingCommand.create_request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        response = await self.remoting.invoke(addr, request, timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(
                response, addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG
            )
        try:
            table = loads_body(response.body).get("subscriptionGroupTable") or {}
        except (BodyError, AttributeError) as exc:
            raise MQClientError(f"broker {addr} answered a group table it cannot read") from exc
        config = table.get(group) if isinstance(table, dict) else None
        return isinstance(config, dict) and config.get("consumeMessageOrderly") is True


def _set_receipt_handles(
    messages: list[MessageExt],
    broker_name: str,
    request: PopMessageRequestHeader,
    answer: PopMessageResponseHeader,
) -> None:
    """Each message's POP_CK, first pop time and (FIFO) delivery count, as
    ``processPopResponse`` sets them. The handle is built from the message's own topic (a
    POP retry topic for a retried one: its retry mark); the message then shows the topic
    popped, as RocketMQ's client shows it."""
    start_offsets = parse_start_offset_info(answer.start_offset_info)
    order_counts = parse_order_count_info(answer.order_count_info)
    parse_msg_offset_info(answer.msg_offset_info)  # malformed info is refused here
    for msg in messages:
        key = queue_key(msg.topic, msg.queue_id)
        # A retried message comes with its handle set by the broker (RocketMQ 5 rewrites its
        # topic to the one popped, so only the broker knows the retry mark).
        if mc.PROPERTY_POP_CK not in msg.properties:
            start = start_offsets.get(key)
            if start is None:
                raise ExtraInfoError(answer.start_offset_info or "", f"has no entry for {key}")
            handle = ExtraInfo.build(
                ck_queue_offset=start,
                pop_time=answer.pop_time,
                invisible_time=answer.invisible_time,
                revive_qid=answer.revive_qid,
                topic=msg.topic,
                broker_name=broker_name,
                queue_id=msg.queue_id,
                queue_offset=msg.queue_offset,
            )
            msg.properties[mc.PROPERTY_POP_CK] = str(handle)
        if request.order:
            count = order_counts.get(queue_offset_key(msg.topic, msg.queue_id, msg.queue_offset))
            if count is None:
                count = order_counts.get(key)
            if count:
                msg.reconsume_times = count
        msg.properties.setdefault(mc.PROPERTY_FIRST_POP_TIME, str(answer.pop_time))
        msg.topic = request.topic
