"""``AdminClient``: RocketMQ's admin operations (``DefaultMQAdminExt``, what ``mqadmin`` runs)
over the OrbitMQ client.

``async with AdminClient(namesrv_addr=...) as admin: await admin.create_topic("T")``.
Topics (create, delete, list, route, status), a group's consume progress, offset resets by
time, message lookups (by offset id, key or unique id) and a group's dead letters (listed and
resent, see :mod:`orbitmq.client.dead_letters`); groups, connections, clients' running info
and the name servers' settings (:mod:`orbitmq.client.group_admin`).

Statistics come from GET_TOPIC_STATS_INFO (202) and GET_CONSUME_STATS (208); resets go
through INVOKE_BROKER_TO_RESET_OFFSET (222), which also tells the group's online consumers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Final, TypeVar

from orbitmq.client.acl_admin import AclAdmin
from orbitmq.client.admin_api import MQAdminAPI
from orbitmq.client.broker_admin import BrokerAdmin
from orbitmq.client.dead_letters import (
    DEFAULT_DEAD_LETTER_LIMIT,
    RESEND_PRODUCER_GROUP,
    DeadLetter,
    ResendResult,
    read_dead_letters,
    resend_dead_letters,
)
from orbitmq.client.errors import MQBrokerError, MQClientError, NoRouteError
from orbitmq.client.group_admin import GroupAdmin
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance, client_config_for
from orbitmq.client.producer import Producer
from orbitmq.client.queue_reader import QueueReader
from orbitmq.client.trace.message_trace import MessageTrace, message_trace
from orbitmq.client.trace.trace_data_encoder import DEFAULT_TRACE_TOPIC
from orbitmq.common import (
    AsyncLifetime,
    MessageExt,
    MessageFormatError,
    MessageQueue,
    decode_message_id,
    is_message_id_shaped,
)
from orbitmq.common.topic import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    dlq_topic,
    retry_topic,
    topic_problem,
)
from orbitmq.common.topic_attributes import TopicAttributeError, parse_attributes_modification
from orbitmq.protocol import (
    MASTER_ID,
    NAMESPACE_ORDER_TOPIC_CONFIG,
    ClusterInfo,
    ConsumeStats,
    OffsetWrapper,
    ResponseCode,
    TopicRouteData,
)
from orbitmq.protocol.header import CreateTopicRequestHeader
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.remoting import RemotingError

#: RocketMQ's mqadmin updateTopic defaults: 8 queues, read and write.
DEFAULT_QUEUE_NUMS: Final = 8
DEFAULT_PERM: Final = PERM_READ | PERM_WRITE
#: How long create_topic waits for the name servers to show the new route.
ROUTE_WAIT_S: Final = 5.0
_ROUTE_POLL_S: Final = 0.05


_T = TypeVar("_T")
#: The end of view_message's error when an offset id finds nothing and no topic was given.
_UNIQUE_ID_NEEDS_TOPIC: Final = (
    "; if it is a unique id (what send() returns as msg_id), looking it up needs its topic,"
    " view_message(msg_id, topic)"
)


@dataclass(frozen=True, slots=True)
class QueueStatus:
    """One queue of a topic (mqadmin topicStatus): its offset range and the store time of
    its last message (0 when empty)."""

    queue: MessageQueue
    min_offset: int
    max_offset: int
    last_update_timestamp_ms: int

    @property
    def broker_name(self) -> str:
        return self.queue.broker_name

    @property
    def queue_id(self) -> int:
        return self.queue.queue_id


@dataclass(frozen=True, slots=True)
class QueueProgress:
    """A group on one queue (mqadmin consumerProgress): the queue's max offset, the group's
    committed offset, and the store time of the last message it consumed (0 when none)."""

    queue: MessageQueue
    broker_offset: int
    consumer_offset: int
    last_timestamp_ms: int

    @property
    def lag(self) -> int:
        return self.broker_offset - self.consumer_offset


@dataclass(frozen=True, slots=True)
class ConsumerProgress:
    """A group's progress on every queue asked about, in (topic, broker, queue id) order."""

    group: str
    queues: tuple[QueueProgress, ...]
    consume_tps: float = 0.0

    @property
    def total_lag(self) -> int:
        return sum(q.lag for q in self.queues)


class AdminClient(GroupAdmin, BrokerAdmin, AclAdmin, AsyncLifetime):
    """Owns an ``MQClientInstance`` (connections, route cache) and the ``MQAdminAPI`` on its
    remoting client; the operations on groups, connections and name server settings come
    from ``GroupAdmin``. Use from one event loop; calls may run concurrently on it."""

    def __init__(
        self, *, namesrv_addr: str | None = None, client_config: ClientConfig | None = None
    ) -> None:
        config = client_config_for(namesrv_addr, client_config)
        self.config = config
        self.instance = MQClientInstance(config)
        self.api = MQAdminAPI(self.instance.remoting)
        self._started = False

    async def start(self) -> None:
        await self.instance.start()
        self._started = True

    async def shutdown(self) -> None:
        if not self._started:
            return
        self._started = False
        await self.instance.shutdown()

    async def _stop(self) -> None:
        await self.shutdown()

    @property
    def _timeout_s(self) -> float:
        return self.config.mq_client_api_timeout_s

    def _check_started(self) -> None:
        if not self._started:
            raise MQClientError("the admin client is not started; use start() or async with")

    async def _any_namesrv(self, call: Callable[[str], Awaitable[_T]]) -> _T:
        """The first name server's answer; a server that cannot be reached passes the call
        on to the next (any one of them knows the whole cluster)."""
        errors: list[str] = []
        for addr in self.config.namesrv_addresses:
            try:
                return await call(addr)
            except RemotingError as exc:
                errors.append(f"{addr}: {exc}")
        raise MQClientError(
            f"no name server answered: {'; '.join(errors) or 'none set'}; "
            "check namesrv_addr and that the name server is running"
        )

    # -- cluster and routes ---------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        """Every broker group by name and the broker names of each cluster."""
        self._check_started()
        return await self._any_namesrv(
            lambda a: self.api.get_broker_cluster_info(a, self._timeout_s)
        )

    async def master_addrs(self, cluster: str | None = None) -> dict[str, str]:
        """Broker name → master address, of ``cluster`` or of every cluster."""
        info = await self.cluster_info()
        names: Iterable[str] = info.broker_addr_table
        if cluster is not None:
            if cluster not in info.cluster_addr_table:
                known = ", ".join(sorted(info.cluster_addr_table)) or "none"
                raise MQClientError(f"cluster {cluster!r} is not known (clusters: {known})")
            names = info.cluster_addr_table[cluster]
        masters: dict[str, str] = {}
        for name in sorted(names):
            data = info.broker_addr_table.get(name)
            addr = data.broker_addrs.get(MASTER_ID) if data is not None else None
            if addr is not None:
                masters[name] = addr
        return masters

    async def topic_route(self, topic: str) -> TopicRouteData:
        """The name servers' route of ``topic``; NoRouteError names an unknown topic."""
        self._check_started()
        return await self.instance.update_topic_route(topic)

    async def _route_masters(self, topic: str) -> dict[str, str]:
        """Broker name → master address of the brokers serving ``topic``."""
        route = await self.topic_route(topic)
        return {
            b.broker_name: b.broker_addrs[MASTER_ID]
            for b in sorted(route.broker_datas, key=lambda b: b.broker_name)
            if MASTER_ID in b.broker_addrs
        }

    async def consumer_ids(self, group: str, topic: str) -> list[str]:
        """Client ids of ``group``'s online consumers, as the brokers serving ``topic`` know
        them (mqadmin consumerConnection); empty when none is online."""
        self._check_started()
        ids: set[str] = set()
        for addr in (await self._route_masters(topic)).values():
            try:
                ids.update(await self.api.get_consumer_id_list(addr, group, self._timeout_s))
            except MQBrokerError as exc:
                # RocketMQ's brokers answer SYSTEM_ERROR "no consumer for this group".
                if exc.code != ResponseCode.SYSTEM_ERROR:
                    raise
        return sorted(ids)

    async def list_topics(self) -> list[str]:
        """Every topic the name servers know, sorted (system topics included, as mqadmin
        topicList shows them)."""
        self._check_started()
        return await self._any_namesrv(lambda a: self.api.get_topic_list(a, self._timeout_s))

    # -- topics ---------------------------------------------------------------------------

    async def create_topic(
        self,
        topic: str,
        *,
        queue_nums: int = DEFAULT_QUEUE_NUMS,
        perm: int = DEFAULT_PERM,
        order: bool = False,
        cluster: str | None = None,
        read_queue_nums: int | None = None,
        broker_addr: str | None = None,
        attributes: str | None = None,
    ) -> dict[str, str]:
        """Create (or update) ``topic`` on every master of ``cluster`` (of every cluster when
        None), or on the one master at ``broker_addr``, and wait until the name servers route
        it there with ``queue_nums`` write queues (and ``read_queue_nums``, by default as
        many, read queues). Returns the brokers it went to (name → address). ``order`` also
        records the queue layout as the name servers' order config, as mqadmin updateTopic
        -o true does. ``attributes`` is RocketMQ 5's change of the topic's attributes,
        ``+message.type=FIFO`` (mqadmin updateTopic -a; docs/operations.md)."""
        self._check_started()
        problem = topic_problem(topic)
        if problem is not None:
            raise MQClientError(f"topic: {problem}")
        try:
            parse_attributes_modification(attributes)
        except TopicAttributeError as exc:
            raise MQClientError(f"attributes: {exc}") from None
        read_nums = queue_nums if read_queue_nums is None else read_queue_nums
        for what, nums in (("queue_nums", queue_nums), ("read_queue_nums", read_nums)):
            if not 1 <= nums <= 1024:
                raise MQClientError(f"{what}: {nums} is not between 1 and 1024")
        masters = await self.master_addrs(cluster)
        if broker_addr is not None:
            masters = {name: addr for name, addr in masters.items() if addr == broker_addr}
            if not masters:
                raise MQClientError(f"broker {broker_addr} is not the address of a master")
        if not masters:
            raise MQClientError(f"no master broker in {cluster or 'any cluster'}")
        header = CreateTopicRequestHeader(
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC_KEY_TOPIC,
            read_queue_nums=read_nums,
            write_queue_nums=queue_nums,
            perm=perm,
            topic_filter_type="SINGLE_TAG",
            topic_sys_flag=0,
            order=order,
            attributes=attributes or None,
        )
        for addr in masters.values():
            await self.api.create_topic(addr, header, self._timeout_s)
        if order:
            layout = ";".join(f"{name}:{queue_nums}" for name in masters)
            for namesrv in self.config.namesrv_addresses:
                await self.api.put_kv_config(
                    namesrv, NAMESPACE_ORDER_TOPIC_CONFIG, topic, layout, self._timeout_s
                )
        await self._wait_for_route(topic, set(masters), queue_nums)
        return masters

    async def _wait_for_route(self, topic: str, brokers: set[str], queue_nums: int) -> None:
        # A broker re-registers with the name servers as soon as a topic changes, but in the
        # background: a client told "created" must also find the route, so wait for it.
        seen: dict[str, int] = {}
        try:
            async with asyncio.timeout(ROUTE_WAIT_S):
                while True:
                    try:
                        route = await self.topic_route(topic)
                        seen = {q.broker_name: q.write_queue_nums for q in route.queue_datas}
                        if all(seen.get(b) == queue_nums for b in brokers):
                            return
                    except NoRouteError:
                        pass
                    await asyncio.sleep(_ROUTE_POLL_S)
        except TimeoutError:
            raise MQClientError(
                f"topic {topic} was created on {sorted(brokers)} but after {ROUTE_WAIT_S} s the"
                f" name servers route it as {seen or 'unknown'}"
            ) from None

    async def delete_topic(self, topic: str, cluster: str | None = None) -> None:
        """Delete ``topic`` on every master (of ``cluster``), then in every name server, and
        its order config: mqadmin deleteTopic's order, so no broker registers it again."""
        self._check_started()
        for addr in (await self.master_addrs(cluster)).values():
            await self.api.delete_topic_in_broker(addr, topic, self._timeout_s)
        for namesrv in self.config.namesrv_addresses:
            await self.api.delete_topic_in_namesrv(namesrv, topic, self._timeout_s)
            await self.api.delete_kv_config(
                namesrv, NAMESPACE_ORDER_TOPIC_CONFIG, topic, self._timeout_s
            )
        self.instance.routes.pop(topic, None)
        self.instance.publish_info.pop(topic, None)

    async def topic_status(self, topic: str) -> list[QueueStatus]:
        """Every queue of ``topic`` on every master: offsets and last store time."""
        self._check_started()
        status: list[QueueStatus] = []
        for addr in (await self._route_masters(topic)).values():
            table = (await self.api.get_topic_stats_info(addr, topic, self._timeout_s)).offset_table
            status.extend(
                QueueStatus(mq, o.min_offset, o.max_offset, o.last_update_timestamp)
                for mq, o in table.items()
            )
        return sorted(status, key=lambda s: (s.broker_name, s.queue_id))

    # -- consumer groups ------------------------------------------------------------------

    async def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        """``group``'s progress in ``topic`` (every topic it has offsets in, when None) and in
        its ``%RETRY%`` topic, on every broker serving them (mqadmin consumerProgress)."""
        self._check_started()
        retry = retry_topic(group)
        masters: dict[str, str] = {}
        try:
            masters |= await self._route_masters(retry)
        except NoRouteError:
            if topic is None:
                raise MQClientError(
                    f"consumer group {group!r} not found: no route of its topic {retry}"
                    " (it never subscribed); name a topic to see its offsets there"
                ) from None
        topics: list[str | None] = [topic]
        if topic is not None and topic != retry:
            topics.append(retry)
        if topic is not None:
            masters |= await self._route_masters(topic)  # NoRouteError: unknown topic
        queues: dict[MessageQueue, OffsetWrapper] = {}
        tps = 0.0
        for name, addr in sorted(masters.items()):
            stats = await self._consume_stats(addr, name, group, topics)
            queues |= stats.offset_table
            tps += stats.consume_tps
        if not queues:
            raise MQClientError(
                f"no consume stats of group {group!r}: its offset table is empty, maybe it"
                " consumed nothing yet"
            )
        progress = (
            QueueProgress(mq, w.broker_offset, w.consumer_offset, w.last_timestamp)
            for mq, w in queues.items()
        )
        ordered = sorted(
            progress, key=lambda p: (p.queue.topic, p.queue.broker_name, p.queue.queue_id)
        )
        return ConsumerProgress(group, tuple(ordered), tps)

    async def _consume_stats(
        self, addr: str, broker_name: str, group: str, topics: list[str | None]
    ) -> ConsumeStats:
        merged = ConsumeStats()
        for topic in topics:
            stats = await self.api.get_consume_stats(addr, group, topic, self._timeout_s)
            merged.offset_table |= stats.offset_table
            merged.consume_tps += stats.consume_tps
        return merged

    async def reset_offset_by_timestamp(
        self, group: str, topic: str, timestamp_ms: int
    ) -> dict[MessageQueue, int]:
        """Move ``group``'s committed offsets in ``topic``, backwards or forwards, to the first
        message stored at or after ``timestamp_ms`` (the max offset when all are older), on
        every broker (mqadmin resetOffsetByTime, forced). Returns each queue's new offset.

        The broker tells the group's online consumers, which reset themselves; when none is
        online the offsets are committed queue by queue, as RocketMQ's tool does."""
        self._check_started()
        offsets: dict[MessageQueue, int] = {}
        for name, addr in (await self._route_masters(topic)).items():
            try:
                table = await self.api.invoke_broker_to_reset_offset(
                    addr, topic, group, timestamp_ms, self._timeout_s
                )
            except MQBrokerError as exc:
                if exc.code != ResponseCode.CONSUMER_NOT_ONLINE:
                    raise
                table = await self._reset_queue_by_queue(addr, name, group, topic, timestamp_ms)
            offsets |= table
        return offsets

    async def _reset_queue_by_queue(
        self, addr: str, broker_name: str, group: str, topic: str, timestamp_ms: int
    ) -> dict[MessageQueue, int]:
        route = self.instance.routes[topic]
        counts = [q.read_queue_nums for q in route.queue_datas if q.broker_name == broker_name]
        table: dict[MessageQueue, int] = {}
        for queue_id in range(max(counts, default=0)):
            mq = MessageQueue(topic, broker_name, queue_id)
            offset = await self.api.search_offset(addr, mq, timestamp_ms, self._timeout_s)
            await self.api.update_consumer_offset(addr, group, mq, offset, self._timeout_s)
            table[mq] = offset
        return table

    # -- messages -------------------------------------------------------------------------

    async def view_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        """The message with id ``msg_id``: an offset message id (SendResult.offset_msg_id),
        read from the broker it names, or a unique id (SendResult.msg_id, the UNIQ_KEY),
        looked up by query in ``topic``'s index, which it needs (RocketMQ's
        viewMessage(topic, msgId): an id that does not decode as an offset id, names no
        broker of the cluster, or finds no message there is taken for a unique id)."""
        self._check_started()
        try:
            (host, port), offset = decode_message_id(msg_id)
        except MessageFormatError as exc:
            if topic is None and is_message_id_shaped(msg_id):
                raise MQClientError(
                    f"msg_id {msg_id} is a unique id (what send() returns as msg_id), not an"
                    " offset message id: looking it up needs its topic,"
                    " view_message(msg_id, topic)"
                ) from None
            if topic is None:
                raise MQClientError(f"msg_id: {exc}") from None
            return await self.query_message_by_unique_id(topic, msg_id)
        addr = f"{host}:{port}"
        if topic is not None:
            # A unique id made by a process whose pid is a multiple of 65536 decodes too, to
            # an address nobody listens on: do not wait for a connect timeout when the
            # address is none of the cluster's brokers.
            known = {
                a
                for b in (await self.cluster_info()).broker_addr_table.values()
                for a in b.broker_addrs.values()
            }
            if addr not in known:
                return await self.query_message_by_unique_id(topic, msg_id)
        try:
            return await self.api.view_message(addr, offset, self._timeout_s)
        except (MQBrokerError, RemotingError, ValueError) as exc:
            if topic is not None:
                return await self.query_message_by_unique_id(topic, msg_id)
            raise MQClientError(
                f"no message {msg_id} at {addr}: {exc}{_UNIQUE_ID_NEEDS_TOPIC}"
            ) from exc

    async def query_messages_by_key(
        self,
        topic: str,
        key: str,
        max_num: int = 32,
        begin_ms: int = 0,
        end_ms: int | None = None,
    ) -> list[MessageExt]:
        """Messages of ``topic`` with ``key`` among their keys, stored in [begin_ms, end_ms]
        (end: now), from every broker of the topic, oldest first, at most ``max_num``."""
        self._check_started()
        found = await self._query(topic, key, max_num, begin_ms, end_ms)
        # The index stores hashes: keep only real matches, as RocketMQ's client does.
        return [m for m in found if key in m.keys][:max_num]

    async def query_message_by_unique_id(self, topic: str, uniq_id: str) -> MessageExt:
        """The message a producer sent with unique id ``uniq_id`` (its SendResult.msg_id); the
        first stored when a retry stored it twice."""
        self._check_started()
        found = [
            m for m in await self._query(topic, uniq_id, 32, 0, None) if m.unique_key == uniq_id
        ]
        if not found:
            raise MQClientError(f"no message with unique id {uniq_id} in topic {topic}")
        return found[0]

    async def query_msg_trace_by_id(
        self,
        msg_id: str,
        trace_topic: str = DEFAULT_TRACE_TOPIC,
        *,
        max_num: int = 64,
        begin_ms: int = 0,
        end_ms: int | None = None,
    ) -> MessageTrace:
        """The trace of message ``msg_id`` (its unique id, what send() returns as msg_id):
        who sent it and where it was stored, which groups consumed it, when and with what
        result (mqadmin queryMsgTraceById: the trace messages of ``trace_topic`` indexed
        under the id, at most ``max_num`` of them, stored in [begin_ms, end_ms])."""
        found = await self.query_messages_by_key(trace_topic, msg_id, max_num, begin_ms, end_ms)
        return message_trace(msg_id, found)

    # -- dead letters ---------------------------------------------------------------------

    async def dead_letters(
        self, group: str, *, limit: int = DEFAULT_DEAD_LETTER_LIMIT
    ) -> list[DeadLetter]:
        """``group``'s dead letters (the messages of ``%DLQ%<group>``, one queue on each
        broker), broker by broker in name order and oldest first on each, at most ``limit``;
        empty when the group has none or is unknown."""
        self._check_started()
        if limit < 1:
            raise MQClientError(f"limit: {limit} must be >= 1")
        return [DeadLetter.of(mq, m) for mq, m in await self._read_dlq(group, limit)]

    async def resend_dead_letters(
        self,
        group: str,
        msg_ids: str | Iterable[str] | None = None,
        *,
        on_result: Callable[[ResendResult], None] | None = None,
    ) -> list[ResendResult]:
        """Send ``group``'s dead letters named by ``msg_ids`` (one DeadLetter.msg_id or
        several; every one when None) to their original topics again, as new messages
        keeping body, keys, tags and user properties, with DLQ_ORIGIN_MESSAGE_ID naming the
        dead letter. One result per id, in order: SENT, ALREADY_RESENT (a resend of it is
        already stored, so this sends nothing) or NOT_FOUND. The dead letters stay in the
        DLQ; see :mod:`orbitmq.client.dead_letters` for how idempotence holds.
        ``on_result`` is told each result as it comes (a progress bar)."""
        self._check_started()
        letters = [m for _, m in await self._read_dlq(group, None)]
        async with Producer(RESEND_PRODUCER_GROUP, instance=self.instance) as producer:
            return await resend_dead_letters(
                producer, letters, msg_ids, self._has_unique_key, on_result
            )

    async def _read_dlq(
        self, group: str, limit: int | None
    ) -> list[tuple[MessageQueue, MessageExt]]:
        async with QueueReader(client_config=self.config) as reader:
            try:
                return await read_dead_letters(reader, dlq_topic(group), limit)
            except NoRouteError:
                return []  # no dead letter yet, or no such group

    async def _has_unique_key(self, topic: str, uniq_id: str) -> bool:
        found = await self._query(topic, uniq_id, 32, 0, None)
        return any(m.unique_key == uniq_id for m in found)

    async def _query(
        self, topic: str, key: str, max_num: int, begin_ms: int, end_ms: int | None
    ) -> list[MessageExt]:
        end = time.time_ns() // 1_000_000 if end_ms is None else end_ms
        found: dict[str, MessageExt] = {}
        for addr in (await self._route_masters(topic)).values():
            for m in await self.api.query_message(
                addr, topic, key, max_num, begin_ms, end, self._timeout_s
            ):
                found[m.msg_id] = m
        return sorted(found.values(), key=lambda m: (m.store_timestamp, m.msg_id))
