"""Headers of the name server's requests: routes, broker registration, KV config and
write permission."""

from __future__ import annotations

from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field


class GetRouteInfoRequestHeader(CommandHeader):
    """GET_ROUTEINFO_BY_TOPIC (105). ``accept_standard_json_only`` asks for route JSON
    without fastjson's unquoted integer keys."""

    topic: str = ext_field("topic")
    accept_standard_json_only: bool | None = ext_field("acceptStandardJsonOnly", default=None)


class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER (103); the body holds the topic configs and filter servers,
    ``compressed`` says whether it is deflated and ``body_crc32`` is its CRC32."""

    broker_name: str = ext_field("brokerName")
    broker_addr: str = ext_field("brokerAddr")
    cluster_name: str = ext_field("clusterName")
    ha_server_addr: str = ext_field("haServerAddr")
    broker_id: int = ext_field("brokerId")
    compressed: bool = ext_field("compressed", default=False)
    body_crc32: Int32 = ext_field("bodyCrc32", default=0)


class RegisterBrokerResponseHeader(CommandHeader):
    """The answer to REGISTER_BROKER: the master's address and HA address, for slaves."""

    ha_server_addr: str | None = ext_field("haServerAddr", default=None)
    master_addr: str | None = ext_field("masterAddr", default=None)


class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER (104)."""

    broker_name: str = ext_field("brokerName")
    broker_addr: str = ext_field("brokerAddr")
    cluster_name: str = ext_field("clusterName")
    broker_id: int = ext_field("brokerId")


class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION (322): has this broker's registration changed? (body: DataVersion)"""

    broker_name: str = ext_field("brokerName")
    broker_addr: str = ext_field("brokerAddr")
    cluster_name: str = ext_field("clusterName")
    broker_id: int = ext_field("brokerId")


class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool = ext_field("changed")


class DeleteTopicFromNamesrvRequestHeader(CommandHeader):
    """DELETE_TOPIC_IN_NAMESRV (216); with ``cluster_name``, only that cluster's brokers."""

    topic: str = ext_field("topic")
    cluster_name: str | None = ext_field("clusterName", default=None)


class GetTopicsByClusterRequestHeader(CommandHeader):
    """GET_TOPICS_BY_CLUSTER (224)."""

    cluster: str = ext_field("cluster")


class GetKVConfigRequestHeader(CommandHeader):
    """GET_KV_CONFIG (101)."""

    namespace: str = ext_field("namespace")
    key: str = ext_field("key")


class GetKVConfigResponseHeader(CommandHeader):
    value: str | None = ext_field("value", default=None)


class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG (100)."""

    namespace: str = ext_field("namespace")
    key: str = ext_field("key")
    value: str = ext_field("value")


class DeleteKVConfigRequestHeader(CommandHeader):
    """DELETE_KV_CONFIG (102)."""

    namespace: str = ext_field("namespace")
    key: str = ext_field("key")


class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE (219)."""

    namespace: str = ext_field("namespace")


class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER (205): stop writes to every topic of one broker name."""

    broker_name: str = ext_field("brokerName")


class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: Int32 = ext_field("wipeTopicCount")


class AddWritePermOfBrokerRequestHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER (327): allow writes again."""

    broker_name: str = ext_field("brokerName")


class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: Int32 = ext_field("addTopicCount")
