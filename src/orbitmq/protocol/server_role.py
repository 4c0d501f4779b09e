"""Which kind of server answers which request codes, and what a REQUEST_CODE_NOT_SUPPORTED
answer therefore says about the address a request went to.

A name server and a broker speak the same remoting protocol on similar ports, so a client
(or a broker's namesrvAddr) pointed at the wrong one connects fine and is only told, per
request, that the code is not supported. These tables turn that answer into the mix-up it
reveals. They hold the codes every server of the kind serves: RocketMQ 4.9.8's and
OrbitMQ's, as the unions of the processors' code groups in ``processor_codes`` (a test
checks them against both OrbitMQ servers' routing tables). A code missing here (one a
broker may lack, a client-side code) reveals nothing and stays a plain error.

Note: RocketMQ's own name server does not answer codes it does not know at all (its
DefaultRequestProcessor returns no response), so a broker request sent to it times out
instead; OrbitMQ's name server answers REQUEST_CODE_NOT_SUPPORTED and is recognised.
"""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.processor_codes import (
    ADMIN_ACL_CODES,
    ADMIN_BROKER_CODES,
    ADMIN_COLD_DATA_CODES,
    ADMIN_GROUP_CODES,
    ADMIN_RUNTIME_CODES,
    ADMIN_STATS_CODES,
    BROKER_REGISTRATION_CODES,
    CLIENT_MANAGE_CODES,
    CONSUMER_MANAGE_CODES,
    END_TRANSACTION_CODES,
    KV_CONFIG_CODES,
    NAMESRV_CONFIG_CODES,
    PULL_MESSAGE_CODES,
    QUERY_MESSAGE_CODES,
    ROUTE_QUERY_CODES,
    SEND_MESSAGE_BACK_CODES,
    SEND_MESSAGE_CODES,
)
from orbitmq.protocol.request_code import RequestCode
from orbitmq.protocol.response_code import ResponseCode

#: RocketMQ's default listen ports (namesrv listenPort, broker listenPort), for the hint.
DEFAULT_NAMESRV_PORT: Final = 9876
DEFAULT_BROKER_PORT: Final = 10911

#: Codes every name server serves (RocketMQ's namesrv DefaultRequestProcessor).
NAMESRV_REQUEST_CODES: Final = (
    BROKER_REGISTRATION_CODES | ROUTE_QUERY_CODES | KV_CONFIG_CODES | NAMESRV_CONFIG_CODES
)

#: Codes every broker serves (RocketMQ's broker processors, as far as OrbitMQ's answer them).
#: POP's codes are not among them: a 4.x broker answers them REQUEST_CODE_NOT_SUPPORTED.
BROKER_REQUEST_CODES: Final = (
    SEND_MESSAGE_CODES
    | SEND_MESSAGE_BACK_CODES
    | END_TRANSACTION_CODES
    | QUERY_MESSAGE_CODES
    | PULL_MESSAGE_CODES
    | CLIENT_MANAGE_CODES
    | CONSUMER_MANAGE_CODES
    | ADMIN_BROKER_CODES
    | ADMIN_STATS_CODES
    | ADMIN_GROUP_CODES
    | ADMIN_RUNTIME_CODES
    | ADMIN_COLD_DATA_CODES
    | ADMIN_ACL_CODES
)


def wrong_server_problem(addr: str, request_code: int, response_code: int) -> str | None:
    """The one-line mix-up that an answer with ``response_code`` from ``addr`` to a request
    with ``request_code`` reveals, with the fix; None when it reveals none (any answer but
    REQUEST_CODE_NOT_SUPPORTED, or a code not in the tables)::

        127.0.0.1:10911 is a broker, not a name server (GET_ROUTEINFO_BY_TOPIC not
        supported); use the name server address, e.g. 127.0.0.1:9876
    """
    if response_code != ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        return None
    host = addr.rpartition(":")[0] or addr
    if request_code in NAMESRV_REQUEST_CODES:
        name = RequestCode(request_code).name
        return (
            f"{addr} is a broker, not a name server ({name} not supported); "
            f"use the name server address, e.g. {host}:{DEFAULT_NAMESRV_PORT}"
        )
    if request_code in BROKER_REQUEST_CODES:
        name = RequestCode(request_code).name
        return (
            f"{addr} is a name server, not a broker ({name} not supported); "
            f"use a broker address, e.g. {host}:{DEFAULT_BROKER_PORT}"
        )
    return None
