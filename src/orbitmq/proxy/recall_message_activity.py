"""``RecallMessageActivity``: the RecallMessage RPC (RocketMQ 5.3's proxy activity of that
name with ``ProducerProcessor.recallMessage`` and the local message service): a producer
cancels a delay message before its time with the ``recall_handle`` of its send answer.

Answers as the proxy's: ILLEGAL_TOPIC for a bad topic name, TOPIC_NOT_FOUND for a missing
topic, MESSAGE_PROPERTY_CONFLICT_WITH_TYPE when the topic is not a DELAY (or MIXED) one
(enableTopicMessageTypeCheck), INTERNAL_SERVER_ERROR with the reason for a handle that does
not decode and for every refusal of the broker (recalls off, another topic's or broker's
handle, a message already delivered); OK with the recalled message's id."""

from __future__ import annotations

from typing import Any

from orbitmq.broker import BrokerController
from orbitmq.common.recall_message_handle import RecallHandleError, RecallMessageHandle
from orbitmq.common.topic_message_type import TopicMessageType
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import RecallMessageRequestHeader, RecallMessageResponseHeader
from orbitmq.proxy.grpc_status import OK_STATUS, GrpcProxyError, status, validate_topic_name
from orbitmq.proxy.proxy_context import LocalChannel, peer_address
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb

_RECALLABLE = (TopicMessageType.DELAY, TopicMessageType.MIXED)


class RecallMessageActivity:
    """Serves RecallMessage for one broker, through its RECALL_MESSAGE processor in process.
    Holds no state; use from the broker's event loop."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def _check_topic(self, topic: str) -> None:
        validate_topic_name(topic)
        config = self.broker.topic_config_manager.select_topic_config(topic)
        if config is None:
            raise GrpcProxyError(
                d.TOPIC_NOT_FOUND,
                f"CODE: 17  DESC: No topic route info in name server for the topic: {topic}",
            )
        kind = config.topic_message_type
        if self.broker.broker_config.enable_topic_message_type_check and kind not in _RECALLABLE:
            raise GrpcProxyError(
                d.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
                f"TopicMessageType validate failed, the expected type is {kind.value}, "
                "but actual type is DELAY",
            )

    async def recall_message(self, request: pb.RecallMessageRequest, context: Any) -> Any:
        topic = request.topic.name
        self._check_topic(topic)
        try:
            handle = RecallMessageHandle.decode(request.recall_handle)
        except RecallHandleError as exc:
            raise GrpcProxyError(d.INTERNAL_SERVER_ERROR, str(exc)) from exc
        header = RecallMessageRequestHeader(
            producer_group=None,
            topic=topic,
            recall_handle=request.recall_handle,
            broker_name=handle.broker_name,
        )
        command = RemotingCommand.create_request(RequestCode.RECALL_MESSAGE, header.to_ext_fields())
        channel = LocalChannel(peer_address(context.peer()))
        processor = self.broker.recall_message_processor
        response = await processor.process_request(channel, command)
        if response is None or response.code != ResponseCode.SUCCESS:
            remark = "no answer" if response is None else (response.remark or str(response.code))
            return pb.RecallMessageResponse(status=status(d.INTERNAL_SERVER_ERROR, remark))
        answer = RecallMessageResponseHeader.from_ext_fields(response.ext_fields)
        return pb.RecallMessageResponse(status=OK_STATUS, message_id=answer.msg_id)
