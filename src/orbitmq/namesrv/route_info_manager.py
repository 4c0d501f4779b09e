"""``RouteInfoManager``: the name server's route registry (RocketMQ's ``RouteInfoManager``).

Pure state: no sockets and no timers. The time comes from an injected ``Clock``; a broker's
connection is kept only as an identity token, so that a closed connection can be matched to
the broker that registered over it.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.protocol import (
    MASTER_ID,
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.protocol.topic_sys_flag import has_unit_flag, has_unit_sub_flag
from orbitmq.remoting import ChannelContext

log = logging.getLogger(__name__)

#: RocketMQ's ``BROKER_CHANNEL_EXPIRED_TIME``: a broker silent this long is dropped.
BROKER_CHANNEL_EXPIRED_TIME_MS: Final = 120_000


@dataclass(slots=True)
class BrokerLiveInfo:
    """When a broker last registered, its topic table version, its connection, its HA
    address."""

    last_update_timestamp_ms: int
    data_version: DataVersion
    channel: ChannelContext | None
    ha_server_addr: str


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """For a slave: its master's address and HA address (None when there is no live master)."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


class RouteInfoManager:
    """Owns the five route tables: topic -> broker name -> QueueData, broker name ->
    BrokerData, cluster -> broker names, broker address -> BrokerLiveInfo, broker address ->
    filter servers.

    Every public method takes one lock (RocketMQ uses a read-write lock), so the manager is
    safe from several tasks and threads. Results are copies: callers may keep or encode them.
    """

    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self._clock = clock
        self._lock = threading.RLock()
        self._topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self._broker_addr_table: dict[str, BrokerData] = {}
        self._cluster_addr_table: dict[str, set[str]] = {}
        self._broker_live_table: dict[str, BrokerLiveInfo] = {}
        self._filter_server_table: dict[str, list[str]] = {}

    # -- registration ---------------------------------------------------------------------

    def register_broker(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper,
        filter_server_list: list[str] | None,
        channel: ChannelContext | None,
    ) -> RegisterBrokerResult:
        """Record (or refresh) one broker. A master's topics are taken when its table's
        DataVersion changed or it registers for the first time."""
        with self._lock:
            self._cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
            broker_data = self._broker_addr_table.get(broker_name)
            register_first = broker_data is None
            if broker_data is None:
                broker_data = BrokerData(cluster_name, broker_name, {})
                self._broker_addr_table[broker_name] = broker_data
            addrs = broker_data.broker_addrs
            # A slave switched to master: one address has one id only.
            for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
                del addrs[other_id]
            old_addr = addrs.get(broker_id)
            addrs[broker_id] = broker_addr
            register_first = register_first or old_addr is None
            version = topic_config_wrapper.data_version
            if broker_id == MASTER_ID and (
                register_first or self._topic_config_changed(broker_addr, version)
            ):
                for config in topic_config_wrapper.topic_config_table.values():
                    self._create_and_update_queue_data(broker_name, config)
            previous = self._broker_live_table.get(broker_addr)
            self._broker_live_table[broker_addr] = BrokerLiveInfo(
                self._clock.now_ms(), copy.copy(version), channel, ha_server_addr
            )
            if previous is None:
                log.info("new broker registered, %s HAServer: %s", broker_addr, ha_server_addr)
            if filter_server_list is not None:
                if filter_server_list:
                    self._filter_server_table[broker_addr] = list(filter_server_list)
                else:
                    self._filter_server_table.pop(broker_addr, None)
            if broker_id != MASTER_ID:
                master_addr = addrs.get(MASTER_ID)
                master = self._broker_live_table.get(master_addr) if master_addr else None
                if master is not None:
                    return RegisterBrokerResult(master.ha_server_addr, master_addr)
            return RegisterBrokerResult()

    def _create_and_update_queue_data(self, broker_name: str, config: TopicConfig) -> None:
        queue_data = QueueData(
            broker_name,
            config.read_queue_nums,
            config.write_queue_nums,
            config.perm,
            config.topic_sys_flag,
        )
        table = self._topic_queue_table.setdefault(config.topic_name, {})
        old = table.get(broker_name)
        table[broker_name] = queue_data
        if old is None:
            log.info("new topic registered, %s %s", config.topic_name, queue_data)
        elif old != queue_data:
            log.info("topic changed, %s OLD: %s NEW: %s", config.topic_name, old, queue_data)

    def _topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        live = self._broker_live_table.get(broker_addr)
        return live is None or live.data_version != version

    def is_broker_topic_config_changed(self, broker_addr: str, version: DataVersion) -> bool:
        with self._lock:
            return self._topic_config_changed(broker_addr, version)

    def query_broker_topic_config(self, broker_addr: str) -> DataVersion | None:
        """The DataVersion of the broker's last registration, if it is live."""
        with self._lock:
            live = self._broker_live_table.get(broker_addr)
            return None if live is None else copy.copy(live.data_version)

    def update_broker_info_update_timestamp(self, broker_addr: str) -> None:
        """Mark the broker as heard from now (QUERY_DATA_VERSION with an unchanged table)."""
        with self._lock:
            live = self._broker_live_table.get(broker_addr)
            if live is not None:
                live.last_update_timestamp_ms = self._clock.now_ms()

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        """Forget one broker id of a broker name; the name and its topics go with its last
        address."""
        with self._lock:
            live = self._broker_live_table.pop(broker_addr, None)
            log.info("unregisterBroker %s, %s", "OK" if live else "Failed", broker_addr)
            self._filter_server_table.pop(broker_addr, None)
            broker_data = self._broker_addr_table.get(broker_name)
            if broker_data is None:
                return
            broker_data.broker_addrs.pop(broker_id, None)
            if broker_data.broker_addrs:
                return
            del self._broker_addr_table[broker_name]
            names = self._cluster_addr_table.get(cluster_name)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self._cluster_addr_table[cluster_name]
            self._remove_topics_of(broker_name)

    def _remove_topics_of(self, broker_name: str) -> None:
        for topic in list(self._topic_queue_table):
            table = self._topic_queue_table[topic]
            table.pop(broker_name, None)
            if not table:
                del self._topic_queue_table[topic]
                log.info("remove topic %s: no broker serves it any more", topic)

    # -- expiry and closed connections ----------------------------------------------------

    def scan_not_active_broker(self) -> list[BrokerLiveInfo]:
        """Drop every broker not heard from for BROKER_CHANNEL_EXPIRED_TIME_MS; returns what
        was dropped so the caller can close those connections."""
        with self._lock:
            now = self._clock.now_ms()
            expired = [
                (addr, live)
                for addr, live in self._broker_live_table.items()
                if live.last_update_timestamp_ms + BROKER_CHANNEL_EXPIRED_TIME_MS < now
            ]
            for addr, _ in expired:
                log.warning(
                    "The broker channel expired, %s %dms", addr, BROKER_CHANNEL_EXPIRED_TIME_MS
                )
                self._destroy_broker_addr(addr)
            return [live for _, live in expired]

    def on_channel_destroy(self, remote_addr: str, channel: ChannelContext | None) -> None:
        """A connection closed: forget the broker that registered over it (or, failing that,
        the broker whose address is ``remote_addr``)."""
        with self._lock:
            found = None
            if channel is not None:
                for addr, live in self._broker_live_table.items():
                    if live.channel is channel:
                        found = addr
                        log.info("the broker's channel destroyed, %s, clean it at once", addr)
                        break
            found = found or remote_addr
            if found:
                self._destroy_broker_addr(found)

    def _destroy_broker_addr(self, broker_addr: str) -> None:
        self._broker_live_table.pop(broker_addr, None)
        self._filter_server_table.pop(broker_addr, None)
        name_found = None
        for name, broker_data in list(self._broker_addr_table.items()):
            ids = [i for i, a in broker_data.broker_addrs.items() if a == broker_addr]
            if not ids:
                continue
            del broker_data.broker_addrs[ids[0]]
            name_found = name
            if not broker_data.broker_addrs:
                del self._broker_addr_table[name]
                self._forget_broker_name(name)
            break
        if name_found is not None:
            log.info("removed broker %s of %s: its channel is destroyed", broker_addr, name_found)

    def _forget_broker_name(self, broker_name: str) -> None:
        for cluster, names in list(self._cluster_addr_table.items()):
            if broker_name in names:
                names.discard(broker_name)
                if not names:
                    del self._cluster_addr_table[cluster]
                break
        self._remove_topics_of(broker_name)

    # -- reads ----------------------------------------------------------------------------

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """Where ``topic`` lives, or None when no live broker serves it."""
        with self._lock:
            table = self._topic_queue_table.get(topic)
            if not table:
                return None
            route = TopicRouteData(queue_datas=[copy.copy(q) for q in table.values()])
            for broker_name in table:
                broker_data = self._broker_addr_table.get(broker_name)
                if broker_data is None:
                    continue
                clone = BrokerData(
                    broker_data.cluster, broker_data.broker_name, dict(broker_data.broker_addrs)
                )
                route.broker_datas.append(clone)
                for addr in clone.broker_addrs.values():
                    servers = self._filter_server_table.get(addr)
                    if servers is not None:
                        route.filter_server_table[addr] = list(servers)
            return route if route.broker_datas else None

    def get_all_cluster_info(self) -> ClusterInfo:
        with self._lock:
            return ClusterInfo(
                copy.deepcopy(self._broker_addr_table),
                {cluster: set(names) for cluster, names in self._cluster_addr_table.items()},
            )

    def get_all_topic_list(self) -> TopicList:
        with self._lock:
            return TopicList(set(self._topic_queue_table))

    def live_broker_addrs(self) -> list[str]:
        with self._lock:
            return list(self._broker_live_table)

    def get_topics_by_cluster(self, cluster: str) -> TopicList:
        with self._lock:
            names = self._cluster_addr_table.get(cluster, set())
            topics = {t for t, table in self._topic_queue_table.items() if names & table.keys()}
            return TopicList(topics)

    def get_system_topic_list(self) -> TopicList:
        """RocketMQ's answer: cluster names and broker names (each a topic on the brokers),
        with the address of one broker to ask."""
        with self._lock:
            result = TopicList()
            for cluster, names in self._cluster_addr_table.items():
                result.topic_list.add(cluster)
                result.topic_list.update(names)
            for broker_data in self._broker_addr_table.values():
                if broker_data.broker_addrs:
                    result.broker_addr = next(iter(broker_data.broker_addrs.values()))
                    break
            return result

    def get_unit_topics(self) -> TopicList:
        return self._topics_where(has_unit_flag)

    def get_has_unit_sub_topic_list(self) -> TopicList:
        return self._topics_where(has_unit_sub_flag)

    def get_has_unit_sub_un_unit_topic_list(self) -> TopicList:
        return self._topics_where(lambda flag: not has_unit_flag(flag) and has_unit_sub_flag(flag))

    def _topics_where(self, test: Callable[[int], bool]) -> TopicList:
        # RocketMQ looks at one QueueData per topic only.
        with self._lock:
            return TopicList(
                {
                    topic
                    for topic, table in self._topic_queue_table.items()
                    if table and test(next(iter(table.values())).topic_sys_flag)
                }
            )

    # -- admin writes ---------------------------------------------------------------------

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Forget ``topic``; with ``cluster_name``, only its queues on that cluster."""
        with self._lock:
            if cluster_name is None:
                self._topic_queue_table.pop(topic, None)
                return
            table = self._topic_queue_table.get(topic)
            if table is None:
                return
            for broker_name in self._cluster_addr_table.get(cluster_name, set()):
                table.pop(broker_name, None)
            if not table:
                del self._topic_queue_table[topic]

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Clear the write bit of every topic on ``broker_name``; how many topics."""
        return self._change_perm(broker_name, lambda perm: perm & ~PERM_WRITE)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Make every topic on ``broker_name`` readable and writable; how many topics."""
        return self._change_perm(broker_name, lambda _: PERM_READ | PERM_WRITE)

    def _change_perm(self, broker_name: str, change: Callable[[int], int]) -> int:
        with self._lock:
            count = 0
            for table in self._topic_queue_table.values():
                queue_data = table.get(broker_name)
                if queue_data is not None:
                    queue_data.perm = change(queue_data.perm)
                    count += 1
            return count
