"""``GroupAdminAPI``: the admin requests about groups, connections and the name servers'
settings, one method per request code as RocketMQ's ``MQClientAPIImpl`` sends them (the
base of ``MQAdminAPI``)."""

from __future__ import annotations

from orbitmq.client.mq_client_api import MQClientAPI
from orbitmq.protocol import (
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    GroupList,
    ProducerConnection,
    RequestCode,
    SubscriptionGroupConfig,
)
from orbitmq.protocol.header import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetProducerConnectionListRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)


class GroupAdminAPI(MQClientAPI):
    """Owns nothing but the shared ``RemotingClient``; safe to share between tasks of one
    event loop."""

    # -- broker ---------------------------------------------------------------------------

    async def update_subscription_group(
        self, addr: str, config: SubscriptionGroupConfig, timeout_s: float
    ) -> None:
        """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): create or replace the group."""
        await self._ok(
            addr, RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, config.to_json(), timeout_s
        )

    async def get_consumer_connection_list(
        self, addr: str, group: str, timeout_s: float
    ) -> ConsumerConnection:
        """GET_CONSUMER_CONNECTION_LIST (203); CONSUMER_NOT_ONLINE when none is online."""
        header = GetConsumerConnectionListRequestHeader(consumer_group=group)
        response = await self._ok(
            addr, RequestCode.GET_CONSUMER_CONNECTION_LIST, header.to_ext_fields(), b"", timeout_s
        )
        return ConsumerConnection.from_json(response.body)

    async def get_producer_connection_list(
        self, addr: str, group: str, timeout_s: float
    ) -> ProducerConnection:
        """GET_PRODUCER_CONNECTION_LIST (204); SYSTEM_ERROR when none is online."""
        header = GetProducerConnectionListRequestHeader(producer_group=group)
        response = await self._ok(
            addr, RequestCode.GET_PRODUCER_CONNECTION_LIST, header.to_ext_fields(), b"", timeout_s
        )
        return ProducerConnection.from_json(response.body)

    async def query_topic_consume_by_who(self, addr: str, topic: str, timeout_s: float) -> set[str]:
        """QUERY_TOPIC_CONSUME_BY_WHO (300): the groups online for ``topic`` or with offsets
        in it on this broker."""
        header = QueryTopicConsumeByWhoRequestHeader(topic=topic)
        response = await self._ok(
            addr, RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header.to_ext_fields(), b"", timeout_s
        )
        return GroupList.from_json(response.body).group_list

    async def get_consumer_running_info(
        self, addr: str, group: str, client_id: str, jstack: bool, timeout_s: float
    ) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO (307), which the broker relays to the client."""
        header = GetConsumerRunningInfoRequestHeader(
            consumer_group=group, client_id=client_id, jstack_enable=jstack
        )
        response = await self._ok(
            addr, RequestCode.GET_CONSUMER_RUNNING_INFO, header.to_ext_fields(), b"", timeout_s
        )
        return ConsumerRunningInfo.from_json(response.body)

    async def consume_message_directly(
        self, addr: str, group: str, client_id: str, msg_id: str, timeout_s: float
    ) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY (309) to the broker storing offset id ``msg_id``, which
        relays the message to the client."""
        header = ConsumeMessageDirectlyResultRequestHeader(
            consumer_group=group, client_id=client_id, msg_id=msg_id
        )
        response = await self._ok(
            addr, RequestCode.CONSUME_MESSAGE_DIRECTLY, header.to_ext_fields(), b"", timeout_s
        )
        return ConsumeMessageDirectlyResult.from_json(response.body)

    # -- name server ----------------------------------------------------------------------

    async def get_namesrv_config(self, namesrv: str, timeout_s: float) -> str:
        """GET_NAMESRV_CONFIG (319): the name server's settings as properties text."""
        response = await self._ok(namesrv, RequestCode.GET_NAMESRV_CONFIG, timeout_s=timeout_s)
        return response.body.decode("utf-8")

    async def update_namesrv_config(self, namesrv: str, properties: str, timeout_s: float) -> None:
        """UPDATE_NAMESRV_CONFIG (318) with properties text."""
        await self._ok(
            namesrv, RequestCode.UPDATE_NAMESRV_CONFIG, {}, properties.encode("utf-8"), timeout_s
        )

    async def get_kv_config(
        self, namesrv: str, namespace: str, key: str, timeout_s: float
    ) -> str | None:
        """GET_KV_CONFIG (101)."""
        header = GetKVConfigRequestHeader(namespace=namespace, key=key)
        response = await self._ok(
            namesrv, RequestCode.GET_KV_CONFIG, header.to_ext_fields(), b"", timeout_s
        )
        return GetKVConfigResponseHeader.from_ext_fields(response.ext_fields).value

    async def wipe_write_perm_of_broker(
        self, namesrv: str, broker_name: str, timeout_s: float
    ) -> int:
        """WIPE_WRITE_PERM_OF_BROKER (205): how many topics lost their write permission."""
        header = WipeWritePermOfBrokerRequestHeader(broker_name=broker_name)
        response = await self._ok(
            namesrv, RequestCode.WIPE_WRITE_PERM_OF_BROKER, header.to_ext_fields(), b"", timeout_s
        )
        answer = WipeWritePermOfBrokerResponseHeader.from_ext_fields(response.ext_fields)
        return answer.wipe_topic_count

    async def add_write_perm_of_broker(
        self, namesrv: str, broker_name: str, timeout_s: float
    ) -> int:
        """ADD_WRITE_PERM_OF_BROKER (327): how many topics got their write permission back."""
        header = AddWritePermOfBrokerRequestHeader(broker_name=broker_name)
        response = await self._ok(
            namesrv, RequestCode.ADD_WRITE_PERM_OF_BROKER, header.to_ext_fields(), b"", timeout_s
        )
        return AddWritePermOfBrokerResponseHeader.from_ext_fields(
            response.ext_fields
        ).add_topic_count
