"""``BrokerRuntimeAPI``: the requests behind mqadmin's broker commands (RocketMQ's
``MQClientAPIImpl`` getBrokerConfig, updateBrokerConfig, getBrokerRuntimeInfo,
viewBrokerStatsData, fetchConsumeStatsInBroker, cleanExpiredConsumeQueue, queryConsumeQueue),
typed; each sends one request to one broker and turns a failure into ``MQBrokerError``."""

from __future__ import annotations

from collections.abc import Mapping

from orbitmq.client.mq_client_api import MQClientAPI
from orbitmq.common.java_properties import parse_properties
from orbitmq.protocol import (
    BrokerStatsData,
    ConsumeStatsList,
    KVTable,
    QueryConsumeQueueResponseBody,
    RequestCode,
)
from orbitmq.protocol.header import (
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)


def properties_body(properties: Mapping[str, str]) -> bytes:
    """Properties as RocketMQ's MixAll.properties2String writes them: ``key=value`` lines."""
    return "".join(f"{key}={value}\n" for key, value in properties.items()).encode("utf-8")


class BrokerRuntimeAPI(MQClientAPI):
    """``MQClientAPI`` plus the broker config, runtime and stats requests. Owns nothing but
    the shared ``RemotingClient``; safe to share between tasks of one event loop."""

    async def get_broker_config(self, addr: str, timeout_s: float) -> dict[str, str]:
        """GET_BROKER_CONFIG (26): every setting of the broker, by RocketMQ's key."""
        response = await self._ok(addr, RequestCode.GET_BROKER_CONFIG, timeout_s=timeout_s)
        return parse_properties(bytes(response.body or b"").decode("utf-8"))

    async def update_broker_config(
        self, addr: str, properties: Mapping[str, str], timeout_s: float
    ) -> str | None:
        """UPDATE_BROKER_CONFIG (25); the broker's remark (OrbitMQ names the keys that take
        effect only at its next start), None when there is none."""
        response = await self._ok(
            addr, RequestCode.UPDATE_BROKER_CONFIG, {}, properties_body(properties), timeout_s
        )
        return response.remark

    async def get_broker_runtime_info(self, addr: str, timeout_s: float) -> dict[str, str]:
        """GET_BROKER_RUNTIME_INFO (28): mqadmin brokerStatus's table."""
        response = await self._ok(addr, RequestCode.GET_BROKER_RUNTIME_INFO, timeout_s=timeout_s)
        return dict(KVTable.from_json(response.body).table)

    async def view_broker_stats_data(
        self, addr: str, stats_name: str, stats_key: str, timeout_s: float
    ) -> BrokerStatsData:
        """VIEW_BROKER_STATS_DATA (315): one counter's minute, hour and day windows."""
        header = ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key)
        response = await self._ok(
            addr, RequestCode.VIEW_BROKER_STATS_DATA, header.to_ext_fields(), b"", timeout_s
        )
        return BrokerStatsData.from_json(response.body)

    async def fetch_consume_stats_in_broker(
        self, addr: str, is_order: bool, timeout_s: float
    ) -> ConsumeStatsList:
        """GET_BROKER_CONSUME_STATS (317): every group's progress on the broker."""
        header = GetConsumeStatsInBrokerHeader(is_order=is_order)
        response = await self._ok(
            addr, RequestCode.GET_BROKER_CONSUME_STATS, header.to_ext_fields(), b"", timeout_s
        )
        return ConsumeStatsList.from_json(response.body)

    async def clean_expired_consume_queue(self, addr: str, timeout_s: float) -> bool:
        """CLEAN_EXPIRED_CONSUMEQUEUE (306)."""
        await self._ok(addr, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, timeout_s=timeout_s)
        return True

    async def query_consume_queue(
        self,
        addr: str,
        header: QueryConsumeQueueRequestHeader,
        timeout_s: float,
    ) -> QueryConsumeQueueResponseBody:
        """QUERY_CONSUME_QUEUE (321): raw consume-queue units from ``header.index``; none
        (``queue_data`` None) when no unit is there (RocketMQ's broker then sends no body)."""
        response = await self._ok(
            addr, RequestCode.QUERY_CONSUME_QUEUE, header.to_ext_fields(), b"", timeout_s
        )
        if not response.body:
            return QueryConsumeQueueResponseBody()
        return QueryConsumeQueueResponseBody.from_json(response.body)
