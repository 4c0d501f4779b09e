"""``GroupAdmin``: the ``AdminClient`` operations on consumer and producer groups, the clients
connected to the brokers and the name servers' own settings, as mqadmin runs them:
updateSubGroup, deleteSubGroup, consumerConnection, producerConnection, consumerStatus
(running info), consumeMessage, the "who consumed it" part of queryMsgById, getNamesrvConfig,
updateNamesrvConfig, wipeWritePerm, addWritePerm, updateKvConfig and deleteKvConfig.

RocketMQ's broker has no WHO_CONSUME_THE_MESSAGE code: mqadmin composes the answer
(``messageTrackDetail``) from QUERY_TOPIC_CONSUME_BY_WHO (300), GET_CONSUMER_CONNECTION_LIST
(203), GET_BROKER_CLUSTER_INFO (106) and GET_CONSUME_STATS (208); so does
``message_track_detail`` here.
"""

from __future__ import annotations

import enum
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass

from orbitmq.client.admin_base import AdminBase
from orbitmq.client.errors import MQBrokerError, MQClientError, NoRouteError
from orbitmq.common import SUB_ALL, MessageExt, MessageQueue
from orbitmq.common.java_properties import format_properties, parse_properties
from orbitmq.common.topic import dlq_topic, retry_topic
from orbitmq.protocol import (
    ConsumeMessageDirectlyResult,
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeType,
    ProducerConnection,
    ResponseCode,
    SubscriptionData,
    SubscriptionGroupConfig,
)


class TrackType(enum.Enum):
    """What became of a message for one consumer group (RocketMQ's TrackType)."""

    CONSUMED = "CONSUMED"
    CONSUMED_BUT_FILTERED = "CONSUMED_BUT_FILTERED"
    PULL = "PULL"
    NOT_CONSUME_YET = "NOT_CONSUME_YET"
    NOT_ONLINE = "NOT_ONLINE"
    UNKNOWN = "UNKNOWN"


@dataclass(frozen=True, slots=True)
class MessageTrack:
    """One group's track of a message; ``exception_desc`` says why it is NOT_ONLINE or
    UNKNOWN."""

    consumer_group: str
    track_type: TrackType
    exception_desc: str | None = None


class ConsumerNotOnlineError(MQClientError):
    """No broker has a connection of the consumer group (RocketMQ's CONSUMER_NOT_ONLINE)."""


class GroupAdmin(AdminBase):
    """A mixin of ``AdminClient``, which provides the members declared abstract here and in
    ``AdminBase``. Owns nothing; use from the admin client's event loop."""

    @abstractmethod
    async def _route_masters(self, topic: str) -> dict[str, str]: ...

    @abstractmethod
    async def delete_topic(self, topic: str, cluster: str | None = None) -> None: ...

    @abstractmethod
    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt: ...

    # -- subscription groups --------------------------------------------------------------

    async def _group_brokers(self, cluster: str | None, broker_addr: str | None) -> list[str]:
        self._check_started()
        if broker_addr is not None:
            return [broker_addr]
        return list((await self.master_addrs(cluster)).values())

    async def update_subscription_group(
        self,
        config: SubscriptionGroupConfig,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        """Create or replace ``config.group_name`` on ``broker_addr``, or on every master (of
        ``cluster``) (mqadmin updateSubGroup -b / -c); the brokers' addresses."""
        if not config.group_name:
            raise MQClientError("group_name: a subscription group needs a name")
        addrs = await self._group_brokers(cluster, broker_addr)
        for addr in addrs:
            await self.api.update_subscription_group(addr, config, self._timeout_s)
        return addrs

    async def delete_subscription_group(
        self,
        group: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        remove_offset: bool = False,
    ) -> list[str]:
        """Delete ``group`` (and with ``remove_offset`` its committed offsets) on
        ``broker_addr`` alone, or on every master (of ``cluster``) and then its %RETRY% and
        %DLQ% topics too, as mqadmin deleteSubGroup -c does (RocketMQ's broker keeps those
        topics when a group is deleted; the tool deletes them). The brokers' addresses."""
        addrs = await self._group_brokers(cluster, broker_addr)
        for addr in addrs:
            await self.api.delete_subscription_group(
                addr, group, self._timeout_s, remove_offset=remove_offset
            )
        if broker_addr is None:
            for topic in (retry_topic(group), dlq_topic(group)):
                await self.delete_topic(topic, cluster)
        return addrs

    # -- connections ----------------------------------------------------------------------

    async def _group_masters(self, group: str) -> dict[str, str]:
        """The masters serving the group's %RETRY% topic: where its consumers heartbeat."""
        try:
            return await self._route_masters(retry_topic(group))
        except NoRouteError:
            raise ConsumerNotOnlineError(
                f"consumer group {group!r} not found: no route of {retry_topic(group)}"
                " (no consumer of it ever started)"
            ) from None

    async def consumer_connection(
        self, group: str, *, broker_addr: str | None = None
    ) -> ConsumerConnection:
        """``group``'s online clients (id, address, language, version), subscriptions, consume
        type, message model and start point, merged over its brokers, or as ``broker_addr``
        alone knows them (mqadmin consumerConnection [-b]). ConsumerNotOnlineError when none
        is online."""
        self._check_started()
        merged = ConsumerConnection()
        seen: set[str] = set()
        addrs = [broker_addr] if broker_addr else (await self._group_masters(group)).values()
        for addr in addrs:
            try:
                found = await self.api.get_consumer_connection_list(addr, group, self._timeout_s)
            except MQBrokerError as exc:
                if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                    raise
                continue
            for connection in found.connection_set:
                if connection.client_id not in seen:
                    seen.add(connection.client_id)
                    merged.connection_set.append(connection)
            merged.subscription_table |= found.subscription_table
            merged.consume_type = found.consume_type
            merged.message_model = found.message_model
            merged.consume_from_where = found.consume_from_where
        if not merged.connection_set:
            raise ConsumerNotOnlineError(f"consumer group {group!r} is not online")
        return merged

    async def producer_connection(self, group: str, topic: str) -> ProducerConnection:
        """``group``'s online producers, as the brokers of ``topic`` know them (mqadmin
        producerConnection -g -t). MQClientError when none is online."""
        self._check_started()
        merged = ProducerConnection()
        seen: set[str] = set()
        for addr in (await self._route_masters(topic)).values():
            try:
                found = await self.api.get_producer_connection_list(addr, group, self._timeout_s)
            except MQBrokerError as exc:
                if exc.code != ResponseCode.SYSTEM_ERROR:  # "the producer group[...] not exist"
                    raise
                continue
            for connection in found.connection_set:
                if connection.client_id not in seen:
                    seen.add(connection.client_id)
                    merged.connection_set.append(connection)
        if not merged.connection_set:
            raise MQClientError(f"producer group {group!r} is not online at the brokers of {topic}")
        return merged

    async def query_topic_consume_by_who(self, topic: str) -> list[str]:
        """The groups consuming ``topic``: online, or with committed offsets in it, on any of
        its brokers; sorted."""
        self._check_started()
        groups: set[str] = set()
        for addr in (await self._route_masters(topic)).values():
            groups |= await self.api.query_topic_consume_by_who(addr, topic, self._timeout_s)
        return sorted(groups)

    # -- asked of a client, through its broker --------------------------------------------

    async def consumer_running_info(
        self,
        group: str,
        client_id: str,
        *,
        jstack: bool = False,
        broker_addr: str | None = None,
    ) -> ConsumerRunningInfo:
        """What client ``client_id`` says of its consumer of ``group``: settings, subscriptions,
        the queues it holds with offsets and cached messages (mqadmin consumerStatus -i).
        ``broker_addr``, or else the first of the group's brokers, relays the question."""
        self._check_started()
        addr = broker_addr or next(iter((await self._group_masters(group)).values()))
        return await self.api.get_consumer_running_info(
            addr, group, client_id, jstack, self._timeout_s
        )

    async def consume_message_directly(
        self, group: str, client_id: str, msg_id: str, topic: str | None = None
    ) -> ConsumeMessageDirectlyResult:
        """Have client ``client_id`` of ``group`` run its listener on message ``msg_id`` (an
        offset id, or a unique id with its ``topic``), outside its queues: offsets and
        retries are untouched (mqadmin consumeMessage). The broker storing it relays it."""
        self._check_started()
        msg = await self.view_message(msg_id, topic)
        host, port = msg.store_host[0], msg.store_host[1]
        # The listener may take a while: three timeouts, as mqadmin waits.
        return await self.api.consume_message_directly(
            f"{host}:{port}", group, client_id, msg.msg_id, self._timeout_s * 3
        )

    # -- who consumed a message -----------------------------------------------------------

    async def message_track_detail(self, msg: MessageExt) -> list[MessageTrack]:
        """For each group consuming ``msg``'s topic: CONSUMED (its offset on the message's
        queue is past it), CONSUMED_BUT_FILTERED (and its tags do not match), NOT_CONSUME_YET,
        PULL (a pull consumer: unknown), NOT_ONLINE or UNKNOWN (RocketMQ's
        messageTrackDetail, what queryMsgById prints)."""
        tracks = []
        for group in await self.query_topic_consume_by_who(msg.topic):
            try:
                connection = await self.consumer_connection(group)
            except ConsumerNotOnlineError as exc:
                tracks.append(MessageTrack(group, TrackType.NOT_ONLINE, str(exc)))
                continue
            if connection.consume_type is ConsumeType.CONSUME_ACTIVELY:
                tracks.append(MessageTrack(group, TrackType.PULL))
                continue
            try:
                consumed = await self._consumed(msg, group)
            except MQBrokerError as exc:
                tracks.append(MessageTrack(group, TrackType.UNKNOWN, str(exc)))
                continue
            track = TrackType.CONSUMED if consumed else TrackType.NOT_CONSUME_YET
            tags = connection.subscription_table.get(msg.topic, SubscriptionData()).tags_set
            if consumed and tags and SUB_ALL not in tags and msg.tags not in tags:
                track = TrackType.CONSUMED_BUT_FILTERED
            tracks.append(MessageTrack(group, track))
        return tracks

    async def _consumed(self, msg: MessageExt, group: str) -> bool:
        """Whether ``group``'s committed offset on the message's queue, at the broker that
        stored it, is past the message."""
        store_addr = f"{msg.store_host[0]}:{msg.store_host[1]}"
        for name, addr in (await self.master_addrs()).items():
            if addr != store_addr:
                continue
            stats = await self.api.get_consume_stats(addr, group, msg.topic, self._timeout_s)
            wrapper = stats.offset_table.get(MessageQueue(msg.topic, name, msg.queue_id))
            return wrapper is not None and wrapper.consumer_offset > msg.queue_offset
        return False

    # -- name servers ---------------------------------------------------------------------

    async def namesrv_config(self) -> dict[str, dict[str, str]]:
        """Each name server's settings, by its address (mqadmin getNamesrvConfig)."""
        self._check_started()
        return {
            addr: parse_properties(await self.api.get_namesrv_config(addr, self._timeout_s))
            for addr in self.config.namesrv_addresses
        }

    async def update_namesrv_config(self, properties: Mapping[str, str]) -> None:
        """Change settings of every name server, which saves them to its config file
        (mqadmin updateNamesrvConfig -k -v). configBlackList keys are refused."""
        self._check_started()
        text = format_properties(dict(properties))
        for addr in self.config.namesrv_addresses:
            await self.api.update_namesrv_config(addr, text, self._timeout_s)

    async def wipe_write_perm(self, broker_name: str) -> dict[str, int]:
        """Stop writes to every topic of ``broker_name`` in every name server's routes; how
        many topics changed, by name server (mqadmin wipeWritePerm)."""
        self._check_started()
        return {
            addr: await self.api.wipe_write_perm_of_broker(addr, broker_name, self._timeout_s)
            for addr in self.config.namesrv_addresses
        }

    async def add_write_perm(self, broker_name: str) -> dict[str, int]:
        """Allow writes to ``broker_name``'s topics again; how many topics changed, by name
        server (mqadmin addWritePerm)."""
        self._check_started()
        return {
            addr: await self.api.add_write_perm_of_broker(addr, broker_name, self._timeout_s)
            for addr in self.config.namesrv_addresses
        }

    async def put_kv_config(self, namespace: str, key: str, value: str) -> None:
        """Set a KV config entry on every name server, which keeps it in kvConfig.json
        (mqadmin updateKvConfig)."""
        self._check_started()
        for addr in self.config.namesrv_addresses:
            await self.api.put_kv_config(addr, namespace, key, value, self._timeout_s)

    async def delete_kv_config(self, namespace: str, key: str) -> None:
        """Remove a KV config entry on every name server (mqadmin deleteKvConfig)."""
        self._check_started()
        for addr in self.config.namesrv_addresses:
            await self.api.delete_kv_config(addr, namespace, key, self._timeout_s)

    async def get_kv_config(self, namespace: str, key: str) -> str | None:
        """The entry as the first name server holds it; None when it has none."""
        self._check_started()
        addr = self.config.namesrv_addresses[0]
        try:
            return await self.api.get_kv_config(addr, namespace, key, self._timeout_s)
        except MQBrokerError as exc:
            if exc.code == ResponseCode.QUERY_NOT_FOUND:
                return None
            raise
