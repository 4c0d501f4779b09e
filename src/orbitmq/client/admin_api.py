"""``MQAdminAPI``: the admin-only requests of RocketMQ's ``MQClientAPIImpl`` (the ones
``DefaultMQAdminExt`` uses), typed, on top of everything ``MQClientAPI`` already sends.

One method per request code, as in ``MQClientAPI``: build the header, send, turn the answer
into a result or an ``MQBrokerError``. Nothing here chooses brokers or falls back; the
``AdminClient`` does that (our broker does not serve every code here yet, and answers
REQUEST_CODE_NOT_SUPPORTED for those).
"""

from __future__ import annotations

from orbitmq.client.acl_admin_api import AclAdminAPI
from orbitmq.client.broker_runtime_api import BrokerRuntimeAPI
from orbitmq.client.group_admin_api import GroupAdminAPI
from orbitmq.common import MessageQueue
from orbitmq.protocol import (
    ClusterInfo,
    ConsumeStats,
    RequestCode,
    ResetOffsetBody,
    TopicConfigSerializeWrapper,
    TopicStatsTable,
)
from orbitmq.protocol.header import (
    DeleteKVConfigRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsRequestHeader,
    GetTopicStatsInfoRequestHeader,
    PutKVConfigRequestHeader,
    ResetOffsetRequestHeader,
)


class MQAdminAPI(GroupAdminAPI, BrokerRuntimeAPI, AclAdminAPI):
    """``MQClientAPI`` plus the admin requests (those on groups, connections and the name
    servers' settings in ``GroupAdminAPI``; the broker config, runtime and stats ones in
    ``BrokerRuntimeAPI``; the ACL ones in ``AclAdminAPI``). Owns nothing but the shared
    ``RemotingClient``; safe to share between tasks of one event loop."""

    # -- name server ----------------------------------------------------------------------

    async def get_broker_cluster_info(self, namesrv: str, timeout_s: float) -> ClusterInfo:
        """GET_BROKER_CLUSTER_INFO (106): every broker group and the clusters they form."""
        response = await self._ok(namesrv, RequestCode.GET_BROKER_CLUSTER_INFO, timeout_s=timeout_s)
        return ClusterInfo.from_json(response.body)

    async def put_kv_config(
        self, namesrv: str, namespace: str, key: str, value: str, timeout_s: float
    ) -> None:
        """PUT_KV_CONFIG (100)."""
        header = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
        await self._ok(namesrv, RequestCode.PUT_KV_CONFIG, header.to_ext_fields(), b"", timeout_s)

    async def delete_kv_config(
        self, namesrv: str, namespace: str, key: str, timeout_s: float
    ) -> None:
        """DELETE_KV_CONFIG (102)."""
        header = DeleteKVConfigRequestHeader(namespace=namespace, key=key)
        await self._ok(
            namesrv, RequestCode.DELETE_KV_CONFIG, header.to_ext_fields(), b"", timeout_s
        )

    # -- broker ---------------------------------------------------------------------------

    async def get_all_topic_config(
        self, addr: str, timeout_s: float
    ) -> TopicConfigSerializeWrapper:
        """GET_ALL_TOPIC_CONFIG (21): the broker's whole topic table."""
        response = await self._ok(addr, RequestCode.GET_ALL_TOPIC_CONFIG, timeout_s=timeout_s)
        return TopicConfigSerializeWrapper.from_json(response.body)

    async def get_topic_stats_info(
        self, addr: str, topic: str, timeout_s: float
    ) -> TopicStatsTable:
        """GET_TOPIC_STATS_INFO (202): each queue's min and max offset and the store time of
        its last message, on this broker."""
        header = GetTopicStatsInfoRequestHeader(topic=topic)
        response = await self._ok(
            addr, RequestCode.GET_TOPIC_STATS_INFO, header.to_ext_fields(), b"", timeout_s
        )
        return TopicStatsTable.from_json(response.body)

    async def get_consume_stats(
        self, addr: str, group: str, topic: str | None, timeout_s: float
    ) -> ConsumeStats:
        """GET_CONSUME_STATS (208): the group's progress on this broker, in ``topic`` or (None)
        in every topic it has offsets in."""
        header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
        response = await self._ok(
            addr, RequestCode.GET_CONSUME_STATS, header.to_ext_fields(), b"", timeout_s
        )
        return ConsumeStats.from_json(response.body)

    async def invoke_broker_to_reset_offset(
        self,
        addr: str,
        topic: str,
        group: str,
        timestamp_ms: int,
        timeout_s: float,
        *,
        is_force: bool = True,
    ) -> dict[MessageQueue, int]:
        """INVOKE_BROKER_TO_RESET_OFFSET (222): the broker moves the group's offsets in
        ``topic`` to the first message stored at or after ``timestamp_ms`` and tells the
        group's online clients; the answer is the new offset of each queue."""
        header = ResetOffsetRequestHeader(
            topic=topic, group=group, timestamp=timestamp_ms, is_force=is_force
        )
        response = await self._ok(
            addr, RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header.to_ext_fields(), b"", timeout_s
        )
        if not response.body:
            return {}
        return dict(ResetOffsetBody.from_json(response.body).offset_table)

    async def delete_subscription_group(
        self, addr: str, group: str, timeout_s: float, *, remove_offset: bool = False
    ) -> None:
        """DELETE_SUBSCRIPTIONGROUP (207); ``remove_offset`` drops its committed offsets."""
        header = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset)
        await self._ok(
            addr, RequestCode.DELETE_SUBSCRIPTIONGROUP, header.to_ext_fields(), b"", timeout_s
        )
