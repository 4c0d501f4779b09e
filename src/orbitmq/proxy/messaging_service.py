"""``apache.rocketmq.v2.MessagingService`` as data: each RPC's name, request and response
types and streaming kind (``METHODS``); the server's handler table built from behaviours
(``generic_handler``); and a typed client (``MessagingServiceStub``) for tests, benchmarks
and tools. Only the message modules are generated (setup.py); the service glue is written
here, typed, instead of grpcio-tools' untyped ``*_pb2_grpc`` module."""

from __future__ import annotations

import enum
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
import grpc.aio
from google.protobuf.message import Message
from grpc.aio import StreamStreamMultiCallable
from grpc.aio import UnaryStreamMultiCallable as Streaming
from grpc.aio import UnaryUnaryMultiCallable as Unary

from orbitmq.proxy.malformed_request import tolerant_deserializer
from orbitmq.proxy.v2 import service_pb2 as pb

#: The service's full name, as the RPC paths carry it (``/<service>/<method>``).
SERVICE_NAME = "apache.rocketmq.v2.MessagingService"


class RpcKind(enum.Enum):
    """How an RPC streams (a gRPC method descriptor's client/server streaming flags)."""

    UNARY = "unary"
    SERVER_STREAMING = "server_streaming"
    BIDI_STREAMING = "bidi_streaming"


@dataclass(frozen=True, slots=True)
class RpcMethod:
    """One RPC of MessagingService."""

    name: str
    request_type: type[Message]
    response_type: type[Message]
    kind: RpcKind

    @property
    def path(self) -> str:
        return f"/{SERVICE_NAME}/{self.name}"


_U, _S, _B = RpcKind.UNARY, RpcKind.SERVER_STREAMING, RpcKind.BIDI_STREAMING

#: Every RPC, by name, in the service's order.
METHODS: dict[str, RpcMethod] = {
    m.name: m
    for m in (
        RpcMethod("QueryRoute", pb.QueryRouteRequest, pb.QueryRouteResponse, _U),
        RpcMethod("Heartbeat", pb.HeartbeatRequest, pb.HeartbeatResponse, _U),
        RpcMethod("SendMessage", pb.SendMessageRequest, pb.SendMessageResponse, _U),
        RpcMethod("QueryAssignment", pb.QueryAssignmentRequest, pb.QueryAssignmentResponse, _U),
        RpcMethod("ReceiveMessage", pb.ReceiveMessageRequest, pb.ReceiveMessageResponse, _S),
        RpcMethod("AckMessage", pb.AckMessageRequest, pb.AckMessageResponse, _U),
        RpcMethod(
            "ForwardMessageToDeadLetterQueue",
            pb.ForwardMessageToDeadLetterQueueRequest,
            pb.ForwardMessageToDeadLetterQueueResponse,
            _U,
        ),
        RpcMethod("PullMessage", pb.PullMessageRequest, pb.PullMessageResponse, _S),
        RpcMethod("UpdateOffset", pb.UpdateOffsetRequest, pb.UpdateOffsetResponse, _U),
        RpcMethod("GetOffset", pb.GetOffsetRequest, pb.GetOffsetResponse, _U),
        RpcMethod("QueryOffset", pb.QueryOffsetRequest, pb.QueryOffsetResponse, _U),
        RpcMethod("EndTransaction", pb.EndTransactionRequest, pb.EndTransactionResponse, _U),
        RpcMethod("Telemetry", pb.TelemetryCommand, pb.TelemetryCommand, _B),
        RpcMethod(
            "NotifyClientTermination",
            pb.NotifyClientTerminationRequest,
            pb.NotifyClientTerminationResponse,
            _U,
        ),
        RpcMethod(
            "ChangeInvisibleDuration",
            pb.ChangeInvisibleDurationRequest,
            pb.ChangeInvisibleDurationResponse,
            _U,
        ),
        RpcMethod("RecallMessage", pb.RecallMessageRequest, pb.RecallMessageResponse, _U),
        RpcMethod(
            "SyncLiteSubscription",
            pb.SyncLiteSubscriptionRequest,
            pb.SyncLiteSubscriptionResponse,
            _U,
        ),
    )
}

#: The server side of one call (grpc.aio's ServicerContext, untyped messages).
Context = grpc.aio.ServicerContext[Any, Any]
#: A unary RPC's behaviour: request, context -> response.
UnaryBehaviour = Callable[[Any, Context], Awaitable[Any]]
#: A server-streaming RPC's behaviour: request, context -> responses.
ServerStreamingBehaviour = Callable[[Any, Context], AsyncIterator[Any]]
#: A bidirectional RPC's behaviour: requests, context -> responses.
BidiStreamingBehaviour = Callable[[AsyncIterator[Any], Context], AsyncIterator[Any]]
Behaviour = UnaryBehaviour | ServerStreamingBehaviour | BidiStreamingBehaviour


def method_handlers(
    behaviours: Mapping[str, Behaviour],
) -> dict[str, grpc.RpcMethodHandler[Any, Any]]:
    """grpc's handler per RPC name for ``behaviours`` (RPC name -> behaviour). RPCs without a
    behaviour are left out: grpc answers them UNIMPLEMENTED. KeyError for a name that is not
    an RPC of MessagingService."""
    handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
    for name, behaviour in behaviours.items():
        method = METHODS[name]
        make = {
            RpcKind.UNARY: grpc.unary_unary_rpc_method_handler,
            RpcKind.SERVER_STREAMING: grpc.unary_stream_rpc_method_handler,
            RpcKind.BIDI_STREAMING: grpc.stream_stream_rpc_method_handler,
        }[method.kind]
        handlers[name] = make(
            behaviour,
            # Bytes that do not parse reach the behaviour as a MalformedRequest: answered
            # INVALID_ARGUMENT in front of it, not UNKNOWN by grpc.
            request_deserializer=tolerant_deserializer(method.request_type),
            response_serializer=method.response_type.SerializeToString,
        )
    return handlers


def generic_handler(behaviours: Mapping[str, Behaviour]) -> grpc.GenericRpcHandler[Any, Any]:
    """MessagingService's generic handler over ``behaviours`` (see ``method_handlers``)."""
    return grpc.method_handlers_generic_handler(SERVICE_NAME, method_handlers(behaviours))


class MessagingServiceStub:
    """A typed client of MessagingService over one grpc.aio channel, one attribute per RPC
    named as the RPC (as grpcio-tools' stubs are). Use from the channel's event loop."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        def unary(name: str) -> Unary[Any, Any]:
            m = METHODS[name]
            return channel.unary_unary(
                m.path, m.request_type.SerializeToString, m.response_type.FromString
            )

        def server_streaming(name: str) -> Streaming[Any, Any]:
            m = METHODS[name]
            return channel.unary_stream(
                m.path, m.request_type.SerializeToString, m.response_type.FromString
            )

        self.QueryRoute: Unary[pb.QueryRouteRequest, pb.QueryRouteResponse] = unary("QueryRoute")
        self.Heartbeat: Unary[pb.HeartbeatRequest, pb.HeartbeatResponse] = unary("Heartbeat")
        self.SendMessage: Unary[pb.SendMessageRequest, pb.SendMessageResponse] = unary(
            "SendMessage"
        )
        self.QueryAssignment: Unary[pb.QueryAssignmentRequest, pb.QueryAssignmentResponse] = unary(
            "QueryAssignment"
        )
        self.ReceiveMessage: Streaming[pb.ReceiveMessageRequest, pb.ReceiveMessageResponse] = (
            server_streaming("ReceiveMessage")
        )
        self.AckMessage: Unary[pb.AckMessageRequest, pb.AckMessageResponse] = unary("AckMessage")
        self.ForwardMessageToDeadLetterQueue: Unary[
            pb.ForwardMessageToDeadLetterQueueRequest, pb.ForwardMessageToDeadLetterQueueResponse
        ] = unary("ForwardMessageToDeadLetterQueue")
        self.PullMessage: Streaming[pb.PullMessageRequest, pb.PullMessageResponse] = (
            server_streaming("PullMessage")
        )
        self.UpdateOffset: Unary[pb.UpdateOffsetRequest, pb.UpdateOffsetResponse] = unary(
            "UpdateOffset"
        )
        self.GetOffset: Unary[pb.GetOffsetRequest, pb.GetOffsetResponse] = unary("GetOffset")
        self.QueryOffset: Unary[pb.QueryOffsetRequest, pb.QueryOffsetResponse] = unary(
            "QueryOffset"
        )
        self.EndTransaction: Unary[pb.EndTransactionRequest, pb.EndTransactionResponse] = unary(
            "EndTransaction"
        )
        m = METHODS["Telemetry"]
        self.Telemetry: StreamStreamMultiCallable[pb.TelemetryCommand, pb.TelemetryCommand] = (
            channel.stream_stream(
                m.path, m.request_type.SerializeToString, m.response_type.FromString
            )
        )
        self.NotifyClientTermination: Unary[
            pb.NotifyClientTerminationRequest, pb.NotifyClientTerminationResponse
        ] = unary("NotifyClientTermination")
        self.ChangeInvisibleDuration: Unary[
            pb.ChangeInvisibleDurationRequest, pb.ChangeInvisibleDurationResponse
        ] = unary("ChangeInvisibleDuration")
        self.RecallMessage: Unary[pb.RecallMessageRequest, pb.RecallMessageResponse] = unary(
            "RecallMessage"
        )
        self.SyncLiteSubscription: Unary[
            pb.SyncLiteSubscriptionRequest, pb.SyncLiteSubscriptionResponse
        ] = unary("SyncLiteSubscription")
