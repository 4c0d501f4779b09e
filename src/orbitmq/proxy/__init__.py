"""The RocketMQ 5 gRPC endpoint (``apache.rocketmq.v2.MessagingService``), served by the
broker process itself next to its remoting port: the .proto files and the modules compiled
from them (``v2``), the service table and typed client, the server, and the activities that
call the broker's processors in process. Needs the ``grpc`` extra (grpcio, protobuf)."""

from orbitmq.proxy.grpc_endpoint import GRPC_OFF, GrpcEndpoint, start_grpc_endpoint
from orbitmq.proxy.grpc_messaging_application import GrpcMessagingApplication
from orbitmq.proxy.grpc_server import GrpcServer
from orbitmq.proxy.messaging_service import (
    METHODS,
    SERVICE_NAME,
    MessagingServiceStub,
    RpcKind,
    RpcMethod,
)

__all__ = [
    "GRPC_OFF",
    "METHODS",
    "SERVICE_NAME",
    "GrpcEndpoint",
    "GrpcMessagingApplication",
    "GrpcServer",
    "MessagingServiceStub",
    "RpcKind",
    "RpcMethod",
    "start_grpc_endpoint",
]
