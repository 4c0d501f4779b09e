"""``SendMessageActivity``: SendMessage (RocketMQ 5's proxy ``SendMessageActivity`` with its
``ProducerProcessor`` in local mode): the messages are converted, checked against the
topic's message type, given a queue, and handed to the broker's own ``SendMessageProcessor``
in process (SEND_MESSAGE_V2, or SEND_BATCH_MESSAGE for several), as a remoting producer's
would be: every rule of the remoting send path applies to gRPC sends too."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, Final

from orbitmq.broker import BrokerController
from orbitmq.common.java_hash import java_string_hash
from orbitmq.common.message import Message
from orbitmq.common.message_decoder import encode_batch_messages, message_properties_to_string
from orbitmq.common.topic_message_type import send_type_problem
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body.topic import TopicConfig
from orbitmq.protocol.header.send import SendMessageRequestHeader, SendMessageResponseHeader
from orbitmq.protocol.perm_name import is_writeable
from orbitmq.proxy.grpc_status import (
    OK_STATUS,
    GrpcProxyError,
    status,
    status_of_response,
    validate_topic_name,
)
from orbitmq.proxy.message_converter import message_properties, message_sys_flag
from orbitmq.proxy.proxy_context import LocalChannel, peer_address
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb

#: Sends the broker stored with a replication or flush problem (a ``SendStatus`` other than
#: SEND_OK): each message's entry carries the proxy's code for it.
_STORED_WITH_PROBLEM: Final[dict[int, tuple[Any, str]]] = {
    ResponseCode.FLUSH_DISK_TIMEOUT: (d.MASTER_PERSISTENCE_TIMEOUT, "FLUSH_DISK_TIMEOUT"),
    ResponseCode.FLUSH_SLAVE_TIMEOUT: (d.SLAVE_PERSISTENCE_TIMEOUT, "FLUSH_SLAVE_TIMEOUT"),
    ResponseCode.SLAVE_NOT_AVAILABLE: (d.HA_NOT_AVAILABLE, "SLAVE_NOT_AVAILABLE"),
}
_LCG_MULTIPLIER: Final = 2862933555777941757
_MASK64: Final = (1 << 64) - 1

#: (message id, offset message id, queue offset) -> a transactional send's transaction id.
TransactionIdOf = Callable[[str, str, int], str]


def consistent_hash(key: int, buckets: int) -> int:
    """Guava's ``Hashing.consistentHash`` (the proxy's queue for a message group): the same
    group lands on the same queue as through RocketMQ's proxy."""
    state, candidate = key & _MASK64, 0
    while True:
        state = (_LCG_MULTIPLIER * state + 1) & _MASK64
        # (int) (state >>> 33) + 1, over 2^31, as Java computes it.
        high = state >> 33
        high = high - (1 << 31) if high >= 1 << 31 else high
        next_candidate = int((candidate + 1) / ((high + 1) / float(1 << 31)))
        if 0 <= next_candidate < buckets:
            candidate = next_candidate
        else:
            return candidate


def _uniq_id_transaction(message_id: str, offset_msg_id: str, queue_offset: int) -> str:
    # RocketMQ's broker answers a half message's transaction id with its unique id.
    return message_id


class SendMessageActivity:
    """Answers SendMessage for one broker. Owns the round-robin queue counter only; use from
    the broker's event loop."""

    def __init__(
        self,
        broker: BrokerController,
        *,
        transaction_id_of: TransactionIdOf = _uniq_id_transaction,
    ) -> None:
        self.broker = broker
        self.processor = broker.send_message_processor
        self.transaction_id_of = transaction_id_of
        self._round_robin = itertools.count()

    async def send_message(self, request: pb.SendMessageRequest, context: Any) -> Any:
        messages = request.messages
        if not messages:
            raise GrpcProxyError(d.MESSAGE_CORRUPTED, "no message to send")
        topic = messages[0].topic
        validate_topic_name(topic.name)
        converted = []
        max_body = self.broker.store_config.max_message_size
        for message in messages:
            if message.topic != topic:
                raise GrpcProxyError(d.MESSAGE_CORRUPTED, "topic in message is not same")
            if len(message.body) > max_body:  # validateMessageBodySize
                raise GrpcProxyError(
                    d.MESSAGE_BODY_TOO_LARGE, f"message body cannot exceed the max {max_body}"
                )
            # The topic stands for the producer group (the transaction check finds its
            # producers by it), as RocketMQ's proxy does.
            converted.append(
                Message(topic.name, message.body, 0, message_properties(message, topic.name))
            )
        config = self.broker.topic_config_manager.select_topic_config(topic.name)
        if config is None:
            raise GrpcProxyError(
                d.TOPIC_NOT_FOUND,
                f"CODE: 17  DESC: No topic route info in name server for the topic: {topic.name}",
            )
        self._check_message_types(config, converted)
        queue_id = self._select_queue(config, messages)
        if self.processor.reject_request():
            return pb.SendMessageResponse(
                status=status(
                    d.TOO_MANY_REQUESTS,
                    "[REJECTREQUEST]system busy, start flow control for a while",
                )
            )
        born = messages[0].system_properties.born_timestamp
        born_ms = born.seconds * 1000 + born.nanos // 1_000_000 or int(time.time() * 1000)
        command = _send_command(converted, queue_id, message_sys_flag(messages[0]), born_ms)
        # Only the client's address matters to the send path (its born host).
        channel = LocalChannel(peer_address(context.peer()))
        response = await self.processor.process_request(channel, command)
        if response is None:  # the processor always answers in process; be safe
            return pb.SendMessageResponse(status=status(d.INTERNAL_SERVER_ERROR, "no answer"))
        return self._answer(response, converted, messages[0].system_properties.message_type)

    def _check_message_types(self, config: TopicConfig, messages: list[Message]) -> None:
        """``ProducerProcessor``'s check (enableTopicMessageTypeCheck): a message must be of
        its topic's type (any type on a MIXED topic; NORMAL when the topic declares none)."""
        if not self.broker.broker_config.enable_topic_message_type_check:
            return
        topic_type = config.topic_message_type
        for message in messages:
            problem = send_type_problem(config.topic_name, topic_type, message.properties)
            if problem is not None:
                raise GrpcProxyError(d.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE, problem)

    def _select_queue(self, config: TopicConfig, messages: Any) -> int:
        """A message group (of a lone message) picks its queue by consistent hash; the rest
        go round robin over the writable queues."""
        if not is_writeable(config.perm) or config.write_queue_nums <= 0:
            raise GrpcProxyError(d.FORBIDDEN, "no writable queue")
        group = messages[0].system_properties.message_group if len(messages) == 1 else ""
        if group:
            return consistent_hash(java_string_hash(group), config.write_queue_nums)
        return next(self._round_robin) % config.write_queue_nums

    def _answer(self, response: RemotingCommand, messages: list[Message], kind: int) -> Any:
        stored = response.code == ResponseCode.SUCCESS or response.code in _STORED_WITH_PROBLEM
        if not stored:
            return pb.SendMessageResponse(status=status_of_response(response.code, response.remark))
        header = SendMessageResponseHeader.from_ext_fields(response.ext_fields)
        problem = _STORED_WITH_PROBLEM.get(response.code)
        entries = []
        for index, message in enumerate(messages):
            message_id = message.properties["UNIQ_KEY"]
            if problem is not None:
                code, name = problem
                entry = pb.SendResultEntry(
                    status=status(code, f"send message failed, sendStatus={name}")
                )
            else:
                offset = header.queue_offset + index
                transaction_id = (
                    self.transaction_id_of(message_id, header.msg_id, offset)
                    if kind == d.TRANSACTION
                    else ""
                )
                entry = pb.SendResultEntry(
                    status=OK_STATUS,
                    message_id=message_id,
                    offset=offset,
                    transaction_id=transaction_id,
                    # A delay message's (RocketMQ 5.3); a batch is never one.
                    recall_handle=header.recall_handle or "",
                )
            entries.append(entry)
        overall = OK_STATUS if problem is None else entries[0].status
        return pb.SendMessageResponse(status=overall, entries=entries)


def _send_command(
    messages: list[Message], queue_id: int, sys_flag: int, born_ms: int
) -> RemotingCommand:
    """The remoting request a producer would send for ``messages`` to ``queue_id``."""
    first = messages[0]
    batch = len(messages) > 1
    header = SendMessageRequestHeader(
        producer_group=first.topic,
        topic=first.topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=sys_flag,
        born_timestamp=born_ms,
        flag=0,
        properties=None if batch else message_properties_to_string(first.properties),
        reconsume_times=int(first.properties.get("RECONSUME_TIME", "0") or 0),
        unit_mode=False,
        batch=batch,
        max_reconsume_times=None,
        broker_name=None,
    )
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    body = encode_batch_messages(messages) if batch else first.body
    return RemotingCommand.create_request(code, header.to_v2().to_ext_fields(), body)
