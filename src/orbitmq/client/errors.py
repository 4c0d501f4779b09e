"""The client's exceptions. Each carries ``retriable`` (another attempt may succeed) and
``refresh_route`` (fetch the topic route again first), which drive the producer's retries
(DESIGN.md "Errors"). A broker's or name server's answer maps to an exception through
``MQBrokerError.for_response``, the one registry of codes."""

from __future__ import annotations

from typing import ClassVar, Final

from orbitmq.common import OrbitError
from orbitmq.protocol import RemotingCommand, ResponseCode, wrong_server_problem


class MQClientError(OrbitError):
    """Misuse or a state the client cannot get out of by retrying: an invalid topic or
    message, a client not started, no route for a topic."""

    retriable: bool = False
    refresh_route: bool = False


class NoRouteError(MQClientError):
    """The name servers know no route for the topic (RocketMQ's "No route info of this
    topic"). Retriable after a refresh: the topic may be being created."""

    retriable = True
    refresh_route = True


class SendTimeoutError(MQClientError, TimeoutError):
    """A send did not finish within its timeout (send_msg_timeout_s). The message names what
    it was still waiting for (the name servers for the route, or a broker) and the last
    error of earlier attempts. Also a ``TimeoutError``, which is what sends raised before."""

    retriable = True


class MQBrokerError(OrbitError):
    """A server answered with an error code. ``code`` and ``remark`` are its answer,
    ``addr`` the server that gave it."""

    #: Codes after which a send may go to another broker (RocketMQ's retryResponseCodes,
    #: plus the flow-control answers, which are retried after a backoff).
    RETRIABLE_CODES: ClassVar[frozenset[int]] = frozenset(
        {
            ResponseCode.TOPIC_NOT_EXIST,
            ResponseCode.SERVICE_NOT_AVAILABLE,
            ResponseCode.SYSTEM_ERROR,
            ResponseCode.NO_PERMISSION,
            ResponseCode.NO_BUYER_ID,
            ResponseCode.NOT_IN_CURRENT_UNIT,
            ResponseCode.SYSTEM_BUSY,
            ResponseCode.FLOW_CONTROL,
        }
    )
    #: Codes that mean the client's view of the route is stale.
    ROUTE_CODES: ClassVar[frozenset[int]] = frozenset(
        {ResponseCode.TOPIC_NOT_EXIST, ResponseCode.NO_PERMISSION}
    )

    def __init__(self, code: int, remark: str | None, addr: str = "") -> None:
        super().__init__(f"CODE: {code} DESC: {remark or ''} BROKER: {addr}")
        self.code = code
        self.remark = remark or ""
        self.addr = addr
        self.retriable = code in self.RETRIABLE_CODES
        self.refresh_route = code in self.ROUTE_CODES

    @property
    def is_flow_control(self) -> bool:
        """The broker is busy: back off before the next attempt."""
        return self.code in FLOW_CONTROL_CODES

    @classmethod
    def for_response(
        cls, response: RemotingCommand, addr: str, request_code: int | None = None
    ) -> MQBrokerError:
        """The exception ``response`` from ``addr`` means. Given the ``request_code`` it
        answered, a REQUEST_CODE_NOT_SUPPORTED that shows a name server taken for a broker
        (or the reverse) is a WrongServerError: the one place the client applies that rule
        (``orbitmq.protocol.wrong_server_problem``)."""
        if request_code is not None:
            problem = wrong_server_problem(addr, request_code, response.code)
            if problem is not None:
                return WrongServerError(problem, response.code, response.remark, addr)
        return cls(response.code, response.remark, addr)


class WrongServerError(MQBrokerError):
    """The address is the other kind of server: a broker where a name server was expected,
    or the reverse (it answered REQUEST_CODE_NOT_SUPPORTED to a code every server of the
    expected kind serves). The message says which and what to use instead; retrying or
    refreshing the route cannot help, the address setting must change."""

    def __init__(self, problem: str, code: int, remark: str | None, addr: str) -> None:
        super().__init__(code, remark, addr)
        self.args = (problem,)
        self.retriable = False
        self.refresh_route = False


#: Answers that ask the client to slow down.
FLOW_CONTROL_CODES: Final = frozenset({ResponseCode.SYSTEM_BUSY, ResponseCode.FLOW_CONTROL})
