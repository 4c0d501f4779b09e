"""The steps in front of every gRPC behaviour: a request that did not parse
(``MalformedRequest``) ends the call with INVALID_ARGUMENT, and with aclEnable=true each
request is checked by the ``GrpcAccessValidator`` (RocketMQ 5's proxy AuthenticationPipeline
and AuthorizationPipeline) before its behaviour runs.

A refused unary call is answered with its response type carrying only a Status (the code
UNAUTHORIZED or FORBIDDEN and the reason), as RocketMQ 5's proxy writes it; a refused
ReceiveMessage gets one response with that Status. Telemetry checks each command of its
stream itself (``TelemetryActivity``), so it is passed through unchanged.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import grpc

from orbitmq.proxy.grpc_access_validator import (
    AclCode,
    GrpcAccessValidator,
    GrpcAclError,
    metadata_dict,
)
from orbitmq.proxy.malformed_request import MalformedRequest
from orbitmq.proxy.messaging_service import (
    METHODS,
    Behaviour,
    Context,
    RpcKind,
    ServerStreamingBehaviour,
    UnaryBehaviour,
)
from orbitmq.proxy.v2 import definition_pb2 as definition

Validator = Callable[[], GrpcAccessValidator | None]


def _refusal(response_type: Any, error: GrpcAclError) -> Any:
    code = definition.UNAUTHORIZED if error.code is AclCode.UNAUTHORIZED else definition.FORBIDDEN
    return response_type(status=definition.Status(code=code, message=error.message))


async def _check(validator: Validator, request: Any, context: Context) -> None:
    if isinstance(request, MalformedRequest):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.details)
    checker = validator()
    if checker is not None:
        metadata = metadata_dict(context.invocation_metadata())
        checker.check(metadata, context.peer(), request)


def _unary(behaviour: UnaryBehaviour, response_type: Any, validator: Validator) -> UnaryBehaviour:
    async def checked(request: Any, context: Context) -> Any:
        try:
            await _check(validator, request, context)
        except GrpcAclError as exc:
            return _refusal(response_type, exc)
        return await behaviour(request, context)

    return checked


def _streaming(
    behaviour: ServerStreamingBehaviour, response_type: Any, validator: Validator
) -> ServerStreamingBehaviour:
    async def checked(request: Any, context: Context) -> AsyncIterator[Any]:
        try:
            await _check(validator, request, context)
        except GrpcAclError as exc:
            yield _refusal(response_type, exc)
            return
        async for response in behaviour(request, context):
            yield response

    return checked


def with_checks(behaviours: Mapping[str, Behaviour], validator: Validator) -> dict[str, Behaviour]:
    """``behaviours`` with the checks in front of each unary and server-streaming one.
    ``validator`` gives the current validator (None: ACL off), read per call."""
    checked: dict[str, Behaviour] = {}
    for name, behaviour in behaviours.items():
        method = METHODS[name]
        if method.kind is RpcKind.UNARY:
            checked[name] = _unary(behaviour, method.response_type, validator)  # type: ignore[arg-type]
        elif method.kind is RpcKind.SERVER_STREAMING:
            checked[name] = _streaming(behaviour, method.response_type, validator)  # type: ignore[arg-type]
        else:
            checked[name] = behaviour
    return checked
