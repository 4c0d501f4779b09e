"""Answers as RocketMQ 5's proxy gives them (its ``ResponseBuilder``, ``GrpcProxyException``
and ``GrpcValidator``): every RPC answers transport status OK with an
``apache.rocketmq.v2.Status`` in its response; the code says what went wrong.

``GrpcProxyError`` is raised by activities for a refusal; ``status_of`` turns any exception
into the Status the proxy would answer; ``status_of_response`` maps a broker processor's
remoting answer (only the proxy's few mapped codes, the rest INTERNAL_SERVER_ERROR)."""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.common.topic import TopicProblem, is_system_topic, validate_topic
from orbitmq.protocol import ResponseCode
from orbitmq.proxy.v2 import definition_pb2 as d

log = logging.getLogger(__name__)

#: RocketMQ's ``ResponseBuilder.RESPONSE_CODE_MAPPING``: the remoting codes the proxy
#: translates; every other failure is INTERNAL_SERVER_ERROR with the broker's remark.
RESPONSE_CODE_MAPPING: Final[dict[int, int]] = {
    ResponseCode.SUCCESS: d.OK,
    ResponseCode.SYSTEM_BUSY: d.TOO_MANY_REQUESTS,
    ResponseCode.REQUEST_CODE_NOT_SUPPORTED: d.NOT_IMPLEMENTED,
    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST: d.CONSUMER_GROUP_NOT_FOUND,
    # ``TopicRouteHelper.isTopicNotExistError``: the proxy answers TOPIC_NOT_FOUND.
    ResponseCode.TOPIC_NOT_EXIST: d.TOPIC_NOT_FOUND,
}

#: Group names RocketMQ keeps for itself (``MixAll`` CID_RMQ_SYS_ prefix and the tools').
_SYSTEM_GROUP_PREFIX: Final = "CID_RMQ_SYS_"
_GROUP_MAX_LENGTH: Final = 255


class GrpcProxyError(Exception):
    """A refusal with its ``apache.rocketmq.v2.Code`` and message (RocketMQ 5's
    ``GrpcProxyException``)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status(code: int, message: str) -> d.Status:
    return d.Status(code=code, message=message)  # type: ignore[arg-type]


#: The one OK status every successful answer carries (message "OK", as Code.OK.name()).
OK_STATUS: Final = d.Status(code=d.OK, message="OK")


def status_of(error: BaseException) -> d.Status:
    """The Status the proxy answers for ``error``: its own code for a GrpcProxyError,
    INTERNAL_SERVER_ERROR (logged) for anything unexpected."""
    if isinstance(error, GrpcProxyError):
        return status(error.code, error.message)
    log.error("gRPC request failed", exc_info=error)
    return status(d.INTERNAL_SERVER_ERROR, f"{type(error).__name__}: {error}")


def status_of_response(code: int, remark: str | None) -> d.Status:
    """A broker processor's answer as the proxy reports it (``buildStatus(int, remark)``)."""
    return status(
        RESPONSE_CODE_MAPPING.get(code, d.INTERNAL_SERVER_ERROR),
        remark if remark is not None else str(code),
    )


def validate_topic_name(name: str) -> None:
    """``GrpcValidator.validateTopic``: ILLEGAL_TOPIC for a bad or a system topic name."""
    problem = validate_topic(name)
    if problem is TopicProblem.TOO_LONG:
        raise GrpcProxyError(
            d.ILLEGAL_TOPIC, f"The specified topic[{name}] is longer than topic max length."
        )
    if problem is not None:
        raise GrpcProxyError(d.ILLEGAL_TOPIC, problem.remark)
    if is_system_topic(name):
        raise GrpcProxyError(d.ILLEGAL_TOPIC, "cannot access system topic")


def validate_consumer_group(name: str) -> None:
    """``GrpcValidator.validateConsumerGroup``: ILLEGAL_CONSUMER_GROUP for a blank, badly
    formed, too long or system group name."""
    if not name.strip():
        raise GrpcProxyError(d.ILLEGAL_CONSUMER_GROUP, "the specified group is blank")
    if len(name) > _GROUP_MAX_LENGTH:
        raise GrpcProxyError(
            d.ILLEGAL_CONSUMER_GROUP,
            f"the specified group is longer than group max length {_GROUP_MAX_LENGTH}.",
        )
    if validate_topic(name) is TopicProblem.ILLEGAL_CHARACTERS:
        raise GrpcProxyError(
            d.ILLEGAL_CONSUMER_GROUP,
            f"the specified group[{name}] contains illegal characters, allowing only "
            "^[%|a-zA-Z0-9_-]+$",
        )
    if name.startswith(_SYSTEM_GROUP_PREFIX):
        raise GrpcProxyError(d.ILLEGAL_CONSUMER_GROUP, "cannot use system consumer group")
