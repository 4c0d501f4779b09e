"""Message trace (R41): RocketMQ's trace records, the hooks that write them, the dispatcher
that sends them to the trace topic, and the trace of one message read back."""

from orbitmq.client.trace.async_trace_dispatcher import (
    TRACE_BATCH_SIZE,
    TRACE_MAX_MSG_SIZE,
    TRACE_QUEUE_CAPACITY,
    AsyncTraceDispatcher,
    TraceDispatcherType,
    TraceSender,
    trace_producer_group,
)
from orbitmq.client.trace.message_trace import (
    EndTransactionTraceRow,
    MessageTrace,
    PubTraceRow,
    SubTraceRow,
    message_trace,
)
from orbitmq.client.trace.trace_data_encoder import (
    CONTENT_SPLITOR,
    DEFAULT_TRACE_TOPIC,
    FIELD_SPLITOR,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceTransferBean,
    TraceType,
    decode_trace_data,
    encode_trace_context,
)
from orbitmq.client.trace.trace_hooks import (
    ConsumeMessageTraceHook,
    EndTransactionTraceHook,
    SendMessageTraceHook,
)

__all__ = [
    "CONTENT_SPLITOR",
    "DEFAULT_TRACE_TOPIC",
    "FIELD_SPLITOR",
    "TRACE_BATCH_SIZE",
    "TRACE_MAX_MSG_SIZE",
    "TRACE_QUEUE_CAPACITY",
    "AsyncTraceDispatcher",
    "ConsumeMessageTraceHook",
    "EndTransactionTraceHook",
    "EndTransactionTraceRow",
    "MessageTrace",
    "PubTraceRow",
    "SendMessageTraceHook",
    "SubTraceRow",
    "TraceBean",
    "TraceContext",
    "TraceDispatcherType",
    "TraceMessageType",
    "TraceSender",
    "TraceTransferBean",
    "TraceType",
    "decode_trace_data",
    "encode_trace_context",
    "message_trace",
    "trace_producer_group",
]
