"""Which kind of server answers which request codes, and what a REQUEST_CODE_NOT_SUPPORTED
answer therefore says about the address a request went to.

A name server and a broker speak the same remoting protocol on similar ports, so a client
(or a broker's namesrvAddr) pointed at the wrong one connects fine and is only told, per
request, that the code is not supported. These tables turn that answer into the mix-up it
reveals. They hold the codes every server of the kind serves: RocketMQ 4.9.8's and
OrbitMQ's (a test checks them against both OrbitMQ servers' routing tables). A code missing
here (one a broker may lack, a client-side code) reveals nothing and stays a plain error.

Note: RocketMQ's own name server does not answer codes it does not know at all (its
DefaultRequestProcessor returns no response), so a broker request sent to it times out
instead; OrbitMQ's name server answers REQUEST_CODE_NOT_SUPPORTED and is recognised.
"""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.request_code import RequestCode
from orbitmq.protocol.response_code import ResponseCode

#: RocketMQ's default listen ports (namesrv listenPort, broker listenPort), for the hint.
DEFAULT_NAMESRV_PORT: Final = 9876
DEFAULT_BROKER_PORT: Final = 10911

#: Codes every name server serves (RocketMQ's namesrv DefaultRequestProcessor).
NAMESRV_REQUEST_CODES: Final = frozenset(
    {
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.QUERY_DATA_VERSION,
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.GET_TOPICS_BY_CLUSTER,
        RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS,
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.ADD_WRITE_PERM_OF_BROKER,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.GET_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.GET_KVLIST_BY_NAMESPACE,
    }
)

#: Codes every broker serves (RocketMQ's broker processors; the admin codes OrbitMQ's broker
#: does not serve yet are left out, so their NOT_SUPPORTED is not taken for a mix-up).
BROKER_REQUEST_CODES: Final = frozenset(
    {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.CONSUMER_SEND_MSG_BACK,
        RequestCode.END_TRANSACTION,
        RequestCode.QUERY_MESSAGE,
        RequestCode.VIEW_MESSAGE_BY_ID,
        RequestCode.PULL_MESSAGE,
        RequestCode.HEART_BEAT,
        RequestCode.UNREGISTER_CLIENT,
        RequestCode.CHECK_CLIENT_CONFIG,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.UPDATE_CONSUMER_OFFSET,
        RequestCode.GET_MAX_OFFSET,
        RequestCode.GET_MIN_OFFSET,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.GET_ALL_TOPIC_CONFIG,
        RequestCode.LOCK_BATCH_MQ,
        RequestCode.UNLOCK_BATCH_MQ,
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_CONSUME_STATS,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
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
