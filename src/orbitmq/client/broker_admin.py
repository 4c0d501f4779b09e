"""``BrokerAdmin``: the ``AdminClient`` operations on one broker (mqadmin's ``-b``): its
settings (getBrokerConfig, updateBrokerConfig), runtime keys (brokerStatus), traffic counters
(statsAll, and which brokers of a group served a consumer group's pulls), every group's
progress (brokerConsumeStats), its consume queues (cleanExpiredCQ, queryCq), a topic's
configuration on each master (its attributes, for topicStatus), and the cold data flow
control (getColdDataFlowCtrInfo and the commands that change it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from orbitmq.client.admin_base import AdminBase
from orbitmq.client.errors import MQBrokerError
from orbitmq.protocol import (
    GROUP_GET_NUMS,
    MASTER_ID,
    BrokerStatsData,
    ConsumeStatsList,
    QueryConsumeQueueResponseBody,
    ResponseCode,
    stats_key,
)
from orbitmq.protocol.body import TopicConfig
from orbitmq.protocol.header import QueryConsumeQueueRequestHeader


class BrokerAdmin(AdminBase):
    """A mixin of ``AdminClient``, which provides the members declared abstract here and in
    ``AdminBase``. Owns nothing; use from the admin client's event loop."""

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        """Every setting of the broker by RocketMQ's key (mqadmin getBrokerConfig)."""
        self._check_started()
        return await self.api.get_broker_config(broker_addr, self._timeout_s)

    async def update_broker_config(
        self, broker_addr: str, properties: Mapping[str, str]
    ) -> str | None:
        """Change settings at run time; the broker saves them in its config file (mqadmin
        updateBrokerConfig). Returns the broker's note naming keys that wait for a restart."""
        self._check_started()
        return await self.api.update_broker_config(broker_addr, properties, self._timeout_s)

    async def broker_runtime_info(self, broker_addr: str) -> dict[str, str]:
        """RocketMQ's runtime keys and values (mqadmin brokerStatus)."""
        self._check_started()
        return await self.api.get_broker_runtime_info(broker_addr, self._timeout_s)

    async def view_stats(
        self, broker_addr: str, stats_name: str, stats_key: str
    ) -> BrokerStatsData:
        """One counter (TOPIC_PUT_NUMS by topic, GROUP_GET_NUMS by ``topic@group``, ...) over
        the last minute, hour and day (what mqadmin statsAll reads)."""
        self._check_started()
        return await self.api.view_broker_stats_data(
            broker_addr, stats_name, stats_key, self._timeout_s
        )

    async def broker_consume_stats(
        self, broker_addr: str, *, is_order: bool = False
    ) -> ConsumeStatsList:
        """Every group's progress on the broker and the summed lag (mqadmin
        brokerConsumeStats); ``is_order`` keeps order topics only."""
        self._check_started()
        return await self.api.fetch_consume_stats_in_broker(broker_addr, is_order, self._timeout_s)

    async def update_cold_data_flow_ctr_group_config(
        self, broker_addr: str, thresholds: Mapping[str, int]
    ) -> None:
        """Set groups' cold read thresholds, bytes per 5 s window (mqadmin
        updateColdDataFlowCtrGroupConfig)."""
        self._check_started()
        await self.api.update_cold_data_flow_ctr_group_config(
            broker_addr, thresholds, self._timeout_s
        )

    async def remove_cold_data_flow_ctr_group_config(self, broker_addr: str, group: str) -> None:
        """Drop a group's own cold read threshold (mqadmin removeColdDataFlowCtrGroupConfig)."""
        self._check_started()
        await self.api.remove_cold_data_flow_ctr_group_config(broker_addr, group, self._timeout_s)

    async def cold_data_flow_ctr_info(self, broker_addr: str) -> dict[str, Any]:
        """Each group's cold reads in the window and the thresholds (mqadmin
        getColdDataFlowCtrInfo)."""
        self._check_started()
        return await self.api.get_cold_data_flow_ctr_info(broker_addr, self._timeout_s)

    async def set_commit_log_read_ahead_mode(self, broker_addr: str, mode: int) -> str:
        """0: the commit log is read with read-ahead, 1: without (mqadmin
        setCommitLogReadAheadMode); the broker's answer."""
        self._check_started()
        return await self.api.set_commit_log_read_ahead_mode(broker_addr, mode, self._timeout_s)

    async def clean_expired_cq(self, broker_addr: str) -> bool:
        """Drop the consume queues whose messages retention deleted (mqadmin
        cleanExpiredCQ)."""
        self._check_started()
        return await self.api.clean_expired_consume_queue(broker_addr, self._timeout_s)

    async def query_cq(
        self,
        broker_addr: str,
        topic: str,
        queue_id: int,
        index: int,
        count: int = 10,
        group: str | None = None,
    ) -> QueryConsumeQueueResponseBody:
        """``count`` raw units of a consume queue from ``index``; with ``group``, its
        subscription and whether each unit passes it (mqadmin queryCq)."""
        self._check_started()
        header = QueryConsumeQueueRequestHeader(
            topic=topic, queue_id=queue_id, index=index, count=count, consumer_group=group
        )
        return await self.api.query_consume_queue(broker_addr, header, self._timeout_s)

    async def group_get_nums(
        self, group: str, topic: str
    ) -> dict[tuple[str, int], BrokerStatsData]:
        """Which brokers of ``topic``'s route, masters and slaves, served ``group``'s pulls
        of it lately: (brokerName, brokerId) -> the messages each handed out in its last
        minute, hour and day (VIEW_BROKER_STATS_DATA GROUP_GET_NUMS, ``topic@group``, as
        mqadmin statsAll asks). A broker that counted none (it answers SYSTEM_ERROR) is
        left out. The windows are sampled every 10 s, 10 min and hour."""
        self._check_started()
        route = await self.topic_route(topic)
        served: dict[tuple[str, int], BrokerStatsData] = {}
        for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
            for broker_id, addr in sorted(broker.broker_addrs.items()):
                try:
                    data = await self.view_stats(addr, GROUP_GET_NUMS, stats_key(topic, group))
                except MQBrokerError as exc:
                    if exc.code != ResponseCode.SYSTEM_ERROR:
                        raise
                    continue
                served[(broker.broker_name, broker_id)] = data
        return served

    async def topic_configs(self, topic: str) -> dict[str, TopicConfig]:
        """``topic``'s configuration on each master serving it, by broker name: queue
        counts, permission and RocketMQ 5's attributes (``message.type``...), read from
        each master's topic table (GET_ALL_TOPIC_CONFIG, as RocketMQ's tools do)."""
        self._check_started()
        route = await self.topic_route(topic)
        configs: dict[str, TopicConfig] = {}
        for broker in sorted(route.broker_datas, key=lambda b: b.broker_name):
            addr = broker.broker_addrs.get(MASTER_ID)
            if addr is None:
                continue
            table = await self.api.get_all_topic_config(addr, self._timeout_s)
            config = table.topic_config_table.get(topic)
            if config is not None:
                configs[broker.broker_name] = config
        return configs
