"""The hooks that write trace records (RocketMQ's SendMessageTraceHookImpl,
ConsumeMessageTraceHookImpl and EndTransactionTraceHookImpl): Pub after each answered send,
SubBefore and SubAfter around each listener call (or each ``poll`` of a lite pull consumer),
EndTransaction after each verdict. Each only builds records and appends them to its
dispatcher, which sends them later.

A batch send writes one Pub record per message (RocketMQ writes one for the whole batch,
under the ids joined by commas, which no query by one message's id finds)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from orbitmq.client.consume_message_hook import CONSUME_CONTEXT_TYPE, ConsumeReturnType
from orbitmq.client.send_result import SendStatus
from orbitmq.client.trace.trace_data_encoder import (
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
)
from orbitmq.common import Clock, Message, UniqueIdGenerator
from orbitmq.common import message_const as mc

if TYPE_CHECKING:
    from orbitmq.client.consume_message_hook import ConsumeMessageContext
    from orbitmq.client.end_transaction_hook import EndTransactionContext
    from orbitmq.client.producer import SendContext
    from orbitmq.client.trace.async_trace_dispatcher import AsyncTraceDispatcher

#: RocketMQ 4.x's property of a timed message (Aliyun's delivery time); a Delay_Msg too.
_START_DELIVER_TIME = "__STARTDELIVERTIME"
_DELAY_PROPERTIES = frozenset(
    {
        mc.PROPERTY_DELAY_TIME_LEVEL,
        _START_DELIVER_TIME,
        mc.PROPERTY_TIMER_DELIVER_MS,
        mc.PROPERTY_TIMER_DELAY_MS,
    }
)
_REQUEST_IDS = UniqueIdGenerator()


def message_type_of(msg: Message) -> TraceMessageType:
    """What DefaultMQProducerImpl tells its send hooks: a half, a delayed message (any
    delay property set), or a normal one."""
    properties = msg.properties
    if properties.get(mc.PROPERTY_TRANSACTION_PREPARED) == "true":
        return TraceMessageType.TRANS_MSG_HALF
    if not properties.keys().isdisjoint(_DELAY_PROPERTIES):
        return TraceMessageType.DELAY_MSG
    return TraceMessageType.NORMAL_MSG


def _pub_bean(msg: Message, broker_addr: str) -> TraceBean:
    properties = msg.properties
    return TraceBean(
        topic=msg.topic,
        tags=properties.get(mc.PROPERTY_TAGS),
        keys=properties.get(mc.PROPERTY_KEYS),
        store_host=broker_addr,
        body_length=len(msg.body),
        msg_type=message_type_of(msg),
    )


class SendMessageTraceHook:
    """Writes a Pub record for each message of each send the broker answered. Owns no state
    but its dispatcher and clock; runs on the producer's event loop."""

    def __init__(self, dispatcher: AsyncTraceDispatcher, clock: Clock) -> None:
        self._dispatcher = dispatcher
        self._clock = clock

    def send_message_before(self, context: SendContext) -> None:
        message = context.message
        messages = message if isinstance(message, list) else (message,)
        if messages[0].topic.startswith(self._dispatcher.trace_topic):
            return  # a trace message: never traced itself
        beans = [_pub_bean(m, context.broker_addr) for m in messages]
        context.mq_trace_context = TraceContext(
            TraceType.PUB,
            timestamp_ms=self._clock.now_ms(),
            group_name=context.producer_group,
            trace_beans=beans,
        )

    def send_message_after(self, context: SendContext) -> None:
        pub = context.mq_trace_context
        result = context.result
        # As RocketMQ: a failed send (no answer) writes nothing, nor does a broker with
        # traceOn=false.
        if not isinstance(pub, TraceContext) or result is None or not result.trace_on:
            return
        beans = pub.trace_beans
        cost_ms = (self._clock.now_ms() - pub.timestamp_ms) // len(beans)
        success = result.send_status is SendStatus.SEND_OK
        if len(beans) == 1:  # the common case: the record is the context itself
            bean = beans[0]
            bean.msg_id, bean.offset_msg_id = result.msg_id, result.offset_msg_id
            bean.store_time_ms = pub.timestamp_ms + cost_ms // 2
            pub.region_id, pub.cost_time_ms, pub.success = result.region_id, cost_ms, success
            self._dispatcher.append(pub)
            return
        msg_ids = result.msg_id.split(",")
        offset_ids = result.offset_msg_id.split(",")
        for i, bean in enumerate(beans):
            bean.msg_id = msg_ids[i] if i < len(msg_ids) else ""
            bean.offset_msg_id = offset_ids[i] if i < len(offset_ids) else ""
            bean.store_time_ms = pub.timestamp_ms + cost_ms // 2
            self._dispatcher.append(
                TraceContext(
                    TraceType.PUB,
                    timestamp_ms=pub.timestamp_ms,
                    region_id=result.region_id,
                    group_name=pub.group_name,
                    cost_time_ms=cost_ms,
                    success=success,
                    trace_beans=[bean],
                )
            )


class ConsumeMessageTraceHook:
    """Writes a SubBefore record before each listener call and a SubAfter after it, paired
    by a request id. Owns no state but its dispatcher and clock; runs on the consumer's
    event loop."""

    def __init__(self, dispatcher: AsyncTraceDispatcher, clock: Clock) -> None:
        self._dispatcher = dispatcher
        self._clock = clock

    def consume_message_before(self, context: ConsumeMessageContext) -> None:
        beans: list[TraceBean] = []
        region = ""
        for m in context.messages:
            properties = m.properties
            if properties.get(mc.PROPERTY_TRACE_SWITCH) == "false":
                continue
            region = properties.get(mc.PROPERTY_MSG_REGION, region)
            beans.append(
                TraceBean(
                    topic=m.topic,
                    # What RocketMQ's consumers show as the id: the producer's unique id.
                    msg_id=m.unique_key or m.msg_id,
                    tags=m.tags,
                    keys=properties.get(mc.PROPERTY_KEYS),
                    store_time_ms=m.store_timestamp,
                    body_length=m.store_size,
                    retry_times=m.reconsume_times,
                )
            )
        if not beans:
            return
        before = TraceContext(
            TraceType.SUB_BEFORE,
            timestamp_ms=self._clock.now_ms(),
            region_id=region,
            group_name=context.consumer_group,
            request_id=_REQUEST_IDS.create(),
            trace_beans=beans,
        )
        context.mq_trace_context = before
        self._dispatcher.append(before)

    def consume_message_after(self, context: ConsumeMessageContext) -> None:
        before = context.mq_trace_context
        if not isinstance(before, TraceContext) or not context.messages:
            return
        now = self._clock.now_ms()
        return_type = context.props.get(CONSUME_CONTEXT_TYPE)
        self._dispatcher.append(
            TraceContext(
                TraceType.SUB_AFTER,
                timestamp_ms=now,
                region_id=before.region_id,
                group_name=before.group_name,
                request_id=before.request_id,
                success=context.success,
                cost_time_ms=(now - before.timestamp_ms) // len(context.messages),
                context_code=ConsumeReturnType[return_type].value if return_type else 0,
                trace_beans=before.trace_beans,
            )
        )


class EndTransactionTraceHook:
    """Writes an EndTransaction record for each verdict sent. Owns no state but its
    dispatcher and clock; runs on the producer's event loop."""

    def __init__(self, dispatcher: AsyncTraceDispatcher, clock: Clock) -> None:
        self._dispatcher = dispatcher
        self._clock = clock

    def end_transaction(self, context: EndTransactionContext) -> None:
        msg = context.message
        if msg.topic.startswith(self._dispatcher.trace_topic):
            return
        bean = TraceBean(
            topic=msg.topic,
            msg_id=context.msg_id,
            tags=msg.tags,
            keys=msg.properties.get(mc.PROPERTY_KEYS),
            store_host=context.broker_addr,
            msg_type=TraceMessageType.TRANS_MSG_COMMIT,
            transaction_state=context.transaction_state.name,
            transaction_id=context.transaction_id,
            from_transaction_check=context.from_transaction_check,
        )
        self._dispatcher.append(
            TraceContext(
                TraceType.END_TRANSACTION,
                timestamp_ms=self._clock.now_ms(),
                region_id=msg.properties.get(mc.PROPERTY_MSG_REGION) or mc.DEFAULT_TRACE_REGION_ID,
                group_name=context.producer_group,
                trace_beans=[bean],
            )
        )
