"""The request codes each of OrbitMQ's server processors answers, one group per processor
(named after RocketMQ's processor class that answers the same codes).

Each group is the one home of its codes: the processor takes it as its ``REQUEST_CODES``
(a test checks each against the processor's handler table), and ``server_role`` unions the
groups into the codes a name server or a broker serves. They live in ``protocol`` because
the client reads the unions and never imports a server package.
"""

from __future__ import annotations

from typing import Final

from orbitmq.protocol.request_code import RequestCode

# -- name server (RocketMQ's DefaultRequestProcessor, split in three) ---------------------

BROKER_REGISTRATION_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.QUERY_DATA_VERSION,
    }
)
ROUTE_QUERY_CODES: Final[frozenset[int]] = frozenset(
    {
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
    }
)
KV_CONFIG_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.PUT_KV_CONFIG,
        RequestCode.GET_KV_CONFIG,
        RequestCode.DELETE_KV_CONFIG,
        RequestCode.GET_KVLIST_BY_NAMESPACE,
    }
)

#: The name server's own settings (RocketMQ's DefaultRequestProcessor updateConfig/getConfig).
NAMESRV_CONFIG_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.UPDATE_NAMESRV_CONFIG,
        RequestCode.GET_NAMESRV_CONFIG,
    }
)

# -- broker ---------------------------------------------------------------------------------

SEND_MESSAGE_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
    }
)
SEND_MESSAGE_BACK_CODES: Final[frozenset[int]] = frozenset({RequestCode.CONSUMER_SEND_MSG_BACK})
#: RocketMQ 5.3's RecallMessageProcessor (not among BROKER_REQUEST_CODES: a 4.x broker or an
#: older 5.x one answers it REQUEST_CODE_NOT_SUPPORTED).
RECALL_MESSAGE_CODES: Final[frozenset[int]] = frozenset({RequestCode.RECALL_MESSAGE})
END_TRANSACTION_CODES: Final[frozenset[int]] = frozenset({RequestCode.END_TRANSACTION})
QUERY_MESSAGE_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.QUERY_MESSAGE,
        RequestCode.VIEW_MESSAGE_BY_ID,
    }
)
PULL_MESSAGE_CODES: Final[frozenset[int]] = frozenset({RequestCode.PULL_MESSAGE})
# RocketMQ 5's POP processors, one code (or two) each.
POP_MESSAGE_CODES: Final[frozenset[int]] = frozenset({RequestCode.POP_MESSAGE})
ACK_MESSAGE_CODES: Final[frozenset[int]] = frozenset(
    {RequestCode.ACK_MESSAGE, RequestCode.BATCH_ACK_MESSAGE}
)
CHANGE_INVISIBLE_TIME_CODES: Final[frozenset[int]] = frozenset(
    {RequestCode.CHANGE_MESSAGE_INVISIBLETIME}
)
PEEK_MESSAGE_CODES: Final[frozenset[int]] = frozenset({RequestCode.PEEK_MESSAGE})
NOTIFICATION_CODES: Final[frozenset[int]] = frozenset({RequestCode.NOTIFICATION})
POLLING_INFO_CODES: Final[frozenset[int]] = frozenset({RequestCode.POLLING_INFO})
CLIENT_MANAGE_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.HEART_BEAT,
        RequestCode.UNREGISTER_CLIENT,
        RequestCode.CHECK_CLIENT_CONFIG,
    }
)
CONSUMER_MANAGE_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.UPDATE_CONSUMER_OFFSET,
    }
)
#: The admin codes OrbitMQ's broker answers so far (RocketMQ's AdminBrokerProcessor answers
#: more); a code not answered yet stays out, so its NOT_SUPPORTED is not taken for a mix-up.
ADMIN_BROKER_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.GET_MAX_OFFSET,
        RequestCode.GET_MIN_OFFSET,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.GET_ALL_TOPIC_CONFIG,
        RequestCode.GET_ALL_CONSUMER_OFFSET,
        RequestCode.GET_ALL_DELAY_OFFSET,
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG,
        RequestCode.LOCK_BATCH_MQ,
        RequestCode.UNLOCK_BATCH_MQ,
    }
)
ADMIN_STATS_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_CONSUME_STATS,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)
#: Groups and the clients connected to the broker: group settings, who is connected, who
#: consumes a topic, and the requests relayed to one consumer client (RocketMQ's
#: AdminBrokerProcessor answers these too; OrbitMQ gives them their own processor).
ADMIN_GROUP_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        RequestCode.GET_PRODUCER_CONNECTION_LIST,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        RequestCode.CONSUME_MESSAGE_DIRECTLY,
    }
)
#: Broker config, runtime info, statistics and consume-queue inspection (the rest of
#: RocketMQ's AdminBrokerProcessor that mqadmin's broker commands send).
ADMIN_RUNTIME_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.GET_BROKER_CONFIG,
        RequestCode.GET_BROKER_RUNTIME_INFO,
        RequestCode.VIEW_BROKER_STATS_DATA,
        RequestCode.GET_BROKER_CONSUME_STATS,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.QUERY_CONSUME_QUEUE,
    }
)
#: RocketMQ 5's cold data flow control and the commit log's read-ahead mode (more of its
#: AdminBrokerProcessor: mqadmin's updateColdDataFlowCtrGroupConfig,
#: removeColdDataFlowCtrGroupConfig, getColdDataFlowCtrInfo, setCommitLogReadAheadMode).
ADMIN_COLD_DATA_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.UPDATE_COLD_DATA_FLOW_CTR_CONFIG,
        RequestCode.REMOVE_COLD_DATA_FLOW_CTR_CONFIG,
        RequestCode.GET_COLD_DATA_FLOW_CTR_INFO,
        RequestCode.SET_COMMITLOG_READ_MODE,
    }
)
#: RocketMQ 4.x plain ACL administration (AdminBrokerProcessor's ACL requests; 54 is
#: 4.9.4's GET_BROKER_CLUSTER_ACL_CONFIG).
ADMIN_ACL_CODES: Final[frozenset[int]] = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
        RequestCode.DELETE_ACL_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO,
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
        RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG,
    }
)
