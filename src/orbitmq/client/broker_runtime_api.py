"""``BrokerRuntimeAPI``: the requests behind mqadmin's broker commands (RocketMQ's
``MQClientAPIImpl`` getBrokerConfig, updateBrokerConfig, getBrokerRuntimeInfo,
viewBrokerStatsData, fetchConsumeStatsInBroker, cleanExpiredConsumeQueue, queryConsumeQueue,
and RocketMQ 5's cold data flow control requests), typed; each sends one request to one
broker and turns a failure into ``MQBrokerError``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

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
    SetCommitLogReadModeRequestHeader,
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

    async def update_cold_data_flow_ctr_group_config(
        self, addr: str, thresholds: Mapping[str, int], timeout_s: float
    ) -> None:
        """UPDATE_COLD_DATA_FLOW_CTR_CONFIG (2001): group -> cold read threshold (bytes)."""
        body = properties_body({group: str(value) for group, value in thresholds.items()})
        await self._ok(addr, RequestCode.UPDATE_COLD_DATA_FLOW_CTR_CONFIG, {}, body, timeout_s)

    async def remove_cold_data_flow_ctr_group_config(
        self, addr: str, group: str, timeout_s: float
    ) -> None:
        """REMOVE_COLD_DATA_FLOW_CTR_CONFIG (2002): the group's admin threshold goes."""
        await self._ok(
            addr, RequestCode.REMOVE_COLD_DATA_FLOW_CTR_CONFIG, {}, group.encode(), timeout_s
        )

    async def get_cold_data_flow_ctr_info(self, addr: str, timeout_s: float) -> dict[str, Any]:
        """GET_COLD_DATA_FLOW_CTR_INFO (2003): runtimeTable, configTable, the thresholds and
        globalAcc, as the broker's JSON has them."""
        response = await self._ok(
            addr, RequestCode.GET_COLD_DATA_FLOW_CTR_INFO, timeout_s=timeout_s
        )
        info: dict[str, Any] = orjson.loads(response.body or b"{}")
        return info

    async def set_commit_log_read_ahead_mode(self, addr: str, mode: int, timeout_s: float) -> str:
        """SET_COMMITLOG_READ_MODE (2004): 0 read-ahead, 1 random reads; the broker's remark."""
        header = SetCommitLogReadModeRequestHeader(read_ahead_mode=mode)
        response = await self._ok(
            addr, RequestCode.SET_COMMITLOG_READ_MODE, header.to_ext_fields(), b"", timeout_s
        )
        return response.remark or ""
