"""``RecallMessageProcessor``: RECALL_MESSAGE (370, RocketMQ 5.3), a producer cancelling a
delay (timer) message before its time with the recall handle its send answer carried; and
``recall_handle_of``, the handle a send answer gets.

A recall stores a marker: a one-byte message on the handle's topic, queue 0, tag
``_RECALL_TAG_``, with TIMER_DEL_UNIQKEY naming the timer (real topic + unique id) and
TIMER_DELIVER_MS the timer's own due time. The timer intake parks it in the timer topic like
any timer; when both fall due the timer store drops the timer and the marker
(``TimerMessageStore``). Refusals, as RocketMQ's: NO_PERMISSION when recallMessageEnable is
off, SLAVE_NOT_AVAILABLE on a slave, SERVICE_NOT_AVAILABLE when the broker may not be
written, TOPIC_NOT_EXIST, and ILLEGAL_OPERATION for a handle that does not decode, names
another topic or broker, or whose message is due already (delivered, or about to be)."""

from __future__ import annotations

import time
from typing import Final, Protocol

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.topic_config_manager import TopicConfigManager
from orbitmq.common import MessageExt, MessageExtBrokerInner, message_properties_to_string
from orbitmq.common import message_const as mc
from orbitmq.common.recall_message_handle import RecallHandleError, RecallMessageHandle
from orbitmq.common.topic import RETRY_GROUP_TOPIC_PREFIX
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import RecallMessageRequestHeader, RecallMessageResponseHeader
from orbitmq.protocol.perm_name import is_writeable
from orbitmq.protocol.processor_codes import RECALL_MESSAGE_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import BrokerRole, MessageStore, PutMessageStatus, build_delete_key

#: The tag of a recall marker (RocketMQ's RECALL_MESSAGE_TAG).
RECALL_MESSAGE_TAG: Final = "_RECALL_TAG_"
#: Put outcomes after which the marker is stored (a slow flush or replica still stores it).
_STORED: Final = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


def recall_handle_of(msg: MessageExt, broker_name: str) -> str | None:
    """The recall handle of a message just stored, if it is a timer parked for later (not a
    retry's): its real topic, this broker, its due time and its unique id. None otherwise
    (RocketMQ's ``attachRecallHandle``; it adds 1 ms to the due time because its wheel
    rounds times down, while OrbitMQ's timers keep their exact time)."""
    properties = msg.properties
    due = properties.get(mc.PROPERTY_TIMER_OUT_MS)
    real_topic = properties.get(mc.PROPERTY_REAL_TOPIC)
    unique_key = properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    if due is None or real_topic is None or unique_key is None:
        return None
    if real_topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return None
    return RecallMessageHandle(real_topic, broker_name, due, unique_key).encode()


class _Broker(Protocol):
    """What the processor takes of the broker (``BrokerController`` is one)."""

    @property
    def broker_config(self) -> BrokerConfig: ...

    @property
    def message_store(self) -> MessageStore: ...

    @property
    def topic_config_manager(self) -> TopicConfigManager: ...


class RecallMessageProcessor(CodeDispatchingProcessor):
    """Answers RECALL_MESSAGE. Holds no state of its own; safe from several tasks of the
    broker's event loop."""

    REQUEST_CODES: Final = RECALL_MESSAGE_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
    ) -> None:
        super().__init__({RequestCode.RECALL_MESSAGE: self.recall_message})
        self.broker_config = broker_config
        self.store = store
        self.topic_config_manager = topic_config_manager

    @classmethod
    def of(cls, broker: _Broker) -> RecallMessageProcessor:
        return cls(broker.broker_config, broker.message_store, broker.topic_config_manager)

    def _refusal(self, header: RecallMessageRequestHeader) -> tuple[int, str] | None:
        config = self.broker_config
        if not config.recall_message_enable:
            return ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden"
        if self.store.config.broker_role is BrokerRole.SLAVE:
            return ResponseCode.SLAVE_NOT_AVAILABLE, "recall failed, broker service not available"
        if not is_writeable(config.broker_permission):
            # RocketMQ's allowRecallWhenBrokerNotWriteable (true by default) is not a key
            # here: a broker that takes no writes takes no recall either.
            return ResponseCode.SERVICE_NOT_AVAILABLE, (
                "recall failed, broker service not available"
            )
        if self.topic_config_manager.select_topic_config(header.topic) is None:
            return ResponseCode.TOPIC_NOT_EXIST, (
                f"recall failed, the topic[{header.topic}] not exist"
            )
        return None

    def _handle(self, header: RecallMessageRequestHeader) -> RecallMessageHandle | str:
        """The decoded handle, or why it is refused (ILLEGAL_OPERATION)."""
        try:
            handle = RecallMessageHandle.decode(header.recall_handle)
        except RecallHandleError as exc:
            return str(exc)
        if handle.topic != header.topic:
            return "recall failed, topic not match"
        if handle.broker_name != self.broker_config.broker_name:
            return "recall failed, broker service not available"
        time_left = handle.timestamp_ms - int(time.time() * 1000)
        if (
            handle.timestamp_ms < 0
            or not 0 < time_left < self.store.config.timer_max_delay_sec * 1000
        ):
            return "recall failed, timestamp invalid"
        return handle

    async def recall_message(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = RecallMessageRequestHeader.from_ext_fields(request.ext_fields)
        response = RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR)
        response.ext_fields[mc.PROPERTY_MSG_REGION] = mc.DEFAULT_TRACE_REGION_ID
        refusal = self._refusal(header)
        if refusal is not None:
            response.set_code_and_remark(*refusal)
            return response
        handle = self._handle(header)
        if isinstance(handle, str):
            response.set_code_and_remark(ResponseCode.ILLEGAL_OPERATION, handle)
            return response
        marker = self._marker(ctx, header, handle)
        result = await self.store.async_put_message(marker)
        if result.status not in _STORED:
            response.set_code_and_remark(ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
            return response
        response.code, response.remark = ResponseCode.SUCCESS, None
        answer = RecallMessageResponseHeader(msg_id=handle.message_id)
        response.ext_fields.update(answer.to_ext_fields())
        return response

    @staticmethod
    def _marker(
        ctx: ChannelContext, header: RecallMessageRequestHeader, handle: RecallMessageHandle
    ) -> MessageExtBrokerInner:
        now_ms = int(time.time() * 1000)
        properties = {
            mc.PROPERTY_TAGS: RECALL_MESSAGE_TAG,
            mc.PROPERTY_TIMER_DEL_UNIQKEY: build_delete_key(handle.topic, handle.message_id),
            mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: handle.message_id,
            mc.PROPERTY_TIMER_DELIVER_MS: handle.timestamp_str,
        }
        if header.producer_group:
            properties[mc.PROPERTY_PRODUCER_GROUP] = header.producer_group
        return MessageExtBrokerInner(
            handle.topic,
            body=b"0",
            properties=properties,
            queue_id=0,
            born_timestamp=now_ms,
            born_host=ctx.remote_socket_address,
            properties_string=message_properties_to_string(properties),
        )
