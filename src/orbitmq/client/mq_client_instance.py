"""``MQClientInstance``: what producers and consumers of one client share (RocketMQ's
``MQClientInstance``): the connections, the route of each topic in use, heartbeats to every
broker, and the answers to requests brokers send (NOTIFY_CONSUMER_IDS_CHANGED).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import random
import socket
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from orbitmq.client.acl_client_rpc_hook import AclClientRPCHook, SessionCredentials
from orbitmq.client.client_admin_processor import ClientAdminProcessor
from orbitmq.client.errors import MQBrokerError, MQClientError, NoRouteError, WrongServerError
from orbitmq.client.find_broker import FindBrokerResult, find_broker_address_in_admin
from orbitmq.client.mq_client_api import MQClientAPI
from orbitmq.client.topic_publish_info import TopicPublishInfo
from orbitmq.common import MessageExt, MessageQueue, decode_message
from orbitmq.common import message_const as mc
from orbitmq.common.periodic import run_every
from orbitmq.protocol import (
    MASTER_ID,
    ConsumerData,
    HeartbeatData,
    ProducerData,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicRouteData,
)
from orbitmq.protocol.body import ResetOffsetBody
from orbitmq.protocol.header import (
    CheckTransactionStateRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    ResetOffsetRequestHeader,
)
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE
from orbitmq.remoting import (
    ChannelContext,
    CodeDispatchingProcessor,
    RemotingClient,
    RemotingError,
    TlsSystemConfig,
)

log = logging.getLogger(__name__)

_instance_numbers = itertools.count()


def default_client_ip() -> str:
    """The address brokers see this client by: the first non-loopback IPv4 address, else
    127.0.0.1 (RocketMQ's RemotingUtil.getLocalAddress, simplified)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("10.255.255.255", 1))  # no packet is sent: it only picks a route
            address: str = probe.getsockname()[0]
            return address
    except OSError:
        return "127.0.0.1"


def default_instance_name() -> str:
    """Unique within the process: RocketMQ shares one instance per client id, so two clients
    of one process in the same group need different ids to both get queues."""
    return f"{os.getpid()}#{next(_instance_numbers)}"


@dataclass
class ClientConfig:
    """RocketMQ's ClientConfig, in Python style. Times in seconds. ``use_tls`` (RocketMQ's
    useTLS): connect to name servers and brokers with TLS, as ``tls_config`` says (its
    tls.client.* keys and tls.test.mode.enable)."""

    namesrv_addr: str = "127.0.0.1:9876"
    client_ip: str = field(default_factory=default_client_ip)
    instance_name: str = field(default_factory=default_instance_name)
    poll_name_server_interval_s: float = 30.0
    heartbeat_broker_interval_s: float = 30.0
    persist_consumer_offset_interval_s: float = 5.0
    mq_client_api_timeout_s: float = 3.0
    unit_name: str | None = None
    #: Plain ACL credentials (a broker with aclEnable=true): with an access key and a secret
    #: key every request is signed as RocketMQ's AclClientRPCHook signs it.
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    security_token: str | None = None
    use_tls: bool = False
    tls_config: TlsSystemConfig = field(default_factory=TlsSystemConfig)

    @property
    def client_id(self) -> str:
        """``ip@instanceName[@unitName]``, as brokers and other consumers see this client."""
        cid = f"{self.client_ip}@{self.instance_name}"
        return f"{cid}@{self.unit_name}" if self.unit_name else cid

    @property
    def namesrv_addresses(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    def rpc_hook(self) -> AclClientRPCHook | None:
        """The signing hook for these credentials; None without both keys."""
        if not (self.access_key and self.secret_key):
            return None
        return AclClientRPCHook(
            SessionCredentials(self.access_key, self.secret_key, self.security_token)
        )


def client_config_for(namesrv_addr: str | None, client_config: ClientConfig | None) -> ClientConfig:
    """The configuration a client's instance is made with: ``client_config`` (the defaults
    when None), its name server address replaced by ``namesrv_addr`` when one is given."""
    config = client_config or ClientConfig()
    if namesrv_addr is not None:
        config.namesrv_addr = namesrv_addr
    return config


class ConsumerInner(Protocol):
    """What the instance needs from a consumer (RocketMQ's MQConsumerInner)."""

    group: str

    def consumer_data(self) -> ConsumerData: ...

    def subscribed_topics(self) -> set[str]: ...

    def update_topic_subscribe_info(self, topic: str, queues: set[MessageQueue]) -> None: ...

    def rebalance_now(self) -> None: ...


@runtime_checkable
class ResettableConsumer(Protocol):
    """A consumer that can move its position when the broker says the group's offsets were
    reset (RESET_CONSUMER_CLIENT_OFFSET)."""

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None: ...


class TransactionChecker(Protocol):
    """What the instance needs from a transactional producer: to be asked what became of
    a half message (RocketMQ's MQProducerInner.checkTransactionState). Must not block: the
    answer goes back later, as END_TRANSACTION to ``broker_addr``."""

    def check_transaction_state(
        self, broker_addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None: ...


class MQClientInstance:
    """Owns the RemotingClient, the route tables (topic → route, topic → publish info, broker
    name → addresses) and the producer and consumer groups registered with it; runs the route
    refresh and heartbeat loops while started. All methods run on one event loop."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        self.client_id = config.client_id
        tls = config.tls_config
        self.remoting = RemotingClient(
            rpc_hook=config.rpc_hook(), ssl=tls.client_context() if config.use_tls else None
        )
        self.api = MQClientAPI(self.remoting)
        self.routes: dict[str, TopicRouteData] = {}
        self.publish_info: dict[str, TopicPublishInfo] = {}
        self.broker_addrs: dict[str, dict[int, str]] = {}
        self.producer_groups: set[str] = set()
        self.consumers: dict[str, ConsumerInner] = {}
        #: The producer groups here with a transaction listener, answering checks.
        self.transaction_checkers: dict[str, TransactionChecker] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._route_lock = asyncio.Lock()
        client_remoting = _ClientRemotingProcessor(self)
        for code in client_remoting.codes:
            self.remoting.table.register_processor(code, client_remoting)
        client_admin = ClientAdminProcessor(self.consumers, lambda: config.namesrv_addresses)
        for code in client_admin.codes:
            self.remoting.table.register_processor(code, client_admin)

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._tasks = [
            asyncio.create_task(
                run_every(
                    lambda: self.config.poll_name_server_interval_s,
                    self.update_all_routes,
                    "route refresh",
                )
            ),
            asyncio.create_task(
                run_every(
                    lambda: self.config.heartbeat_broker_interval_s,
                    self.send_heartbeat_to_all_brokers,
                    "heartbeat",
                )
            ),
        ]

    async def shutdown(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        self._started = False
        await self.remoting.close()

    # -- registrations --------------------------------------------------------------------

    def register_producer(self, group: str) -> None:
        self.producer_groups.add(group)

    def register_consumer(self, consumer: ConsumerInner) -> None:
        if consumer.group in self.consumers:
            raise MQClientError(
                f"the consumer group[{consumer.group}] has been created before, specify another"
                " name please."
            )
        self.consumers[consumer.group] = consumer

    async def unregister_producer(self, group: str) -> None:
        self.producer_groups.discard(group)
        await self._unregister_at_brokers(group, None)

    async def unregister_consumer(self, group: str) -> None:
        self.consumers.pop(group, None)
        await self._unregister_at_brokers(None, group)

    async def _unregister_at_brokers(self, producer: str | None, consumer: str | None) -> None:
        for addrs in list(self.broker_addrs.values()):
            for addr in addrs.values():
                try:
                    await self.api.unregister_client(
                        addr,
                        self.client_id,
                        producer,
                        consumer,
                        self.config.mq_client_api_timeout_s,
                    )
                except Exception as exc:  # the broker may be gone already
                    log.info("unregister from %s failed: %s", addr, exc)

    # -- routes ---------------------------------------------------------------------------

    async def update_topic_route(
        self, topic: str, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> TopicRouteData:
        """Fetch ``topic``'s route from a name server and update every table derived from it.

        With ``default_topic`` (a producer's createTopicKey, TBW102) a topic nobody knows yet
        is routed like the default topic with at most ``default_queue_nums`` queues: the
        broker creates it on the first send, as in RocketMQ. Raises NoRouteError otherwise."""
        async with self._route_lock:
            try:
                route = await self._fetch_route(topic)
            except NoRouteError:
                if default_topic is None:
                    raise
                route = await self._fetch_route(default_topic)
                for qd in route.queue_datas:
                    qd.read_queue_nums = qd.write_queue_nums = min(
                        default_queue_nums, qd.read_queue_nums
                    )
            self.routes[topic] = route
            for broker in route.broker_datas:
                self.broker_addrs[broker.broker_name] = dict(broker.broker_addrs)
            self.publish_info[topic] = publish_info_of(topic, route)
            subscribe = subscribe_queues_of(topic, route)
            for consumer in self.consumers.values():
                if topic in consumer.subscribed_topics():
                    consumer.update_topic_subscribe_info(topic, subscribe)
            return route

    async def _fetch_route(self, topic: str) -> TopicRouteData:
        addresses = self.config.namesrv_addresses
        if not addresses:
            raise MQClientError("No name server address, please set namesrv_addr")
        failures: list[tuple[str, Exception]] = []
        # Any name server will do; start at a random one so clients spread their load.
        start = random.randrange(len(addresses))
        for addr in addresses[start:] + addresses[:start]:
            try:
                return await self.api.get_topic_route(
                    addr, topic, self.config.mq_client_api_timeout_s
                )
            except NoRouteError:
                raise
            except (RemotingError, MQClientError, MQBrokerError) as exc:
                failures.append((addr, exc))
        raise route_failure(topic, failures) from failures[-1][1]

    async def update_all_routes(self) -> None:
        topics = set(self.routes)
        for consumer in self.consumers.values():
            topics |= consumer.subscribed_topics()
        for topic in sorted(topics):
            try:
                await self.update_topic_route(topic)
            except NoRouteError:
                log.debug("no route for %s yet", topic)
            except Exception as exc:
                log.warning("route refresh of %s failed: %s", topic, exc)

    async def topic_publish_info(
        self, topic: str, default_topic: str | None = None, default_queue_nums: int = 4
    ) -> TopicPublishInfo:
        """The cached publish info of ``topic``, fetched when missing or empty (see
        ``update_topic_route`` for the default topic)."""
        info = self.publish_info.get(topic)
        if info is None or not info.ok():
            await self.update_topic_route(topic, default_topic, default_queue_nums)
            info = self.publish_info[topic]
        return info

    def routes_master(self, mq: MessageQueue) -> bool:
        """Whether the cached route of ``mq``'s topic lists a master of ``mq``'s broker (a
        broker that stopped is dropped from routes; ``broker_addrs`` keeps it a while)."""
        route = self.routes.get(mq.topic)
        return route is not None and any(
            b.broker_name == mq.broker_name and MASTER_ID in b.broker_addrs
            for b in route.broker_datas
        )

    def find_broker_addr(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        return self.broker_addrs.get(broker_name, {}).get(broker_id)

    async def find_broker_addr_or_fetch(
        self, broker_name: str, topic: str, broker_id: int = MASTER_ID
    ) -> str:
        """The broker's address, refreshing ``topic``'s route once if it is unknown."""
        addr = self.find_broker_addr(broker_name, broker_id)
        if addr is None:
            await self.update_topic_route(topic)
            addr = self.find_broker_addr(broker_name, broker_id)
        if addr is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        return addr

    async def find_broker_address_in_admin_or_fetch(
        self, broker_name: str, topic: str
    ) -> FindBrokerResult:
        """The master of ``broker_name`` while the route lists it, else a slave (RocketMQ's
        findBrokerAddressInAdmin, as the offset store uses it), refreshing ``topic``'s route
        once if the group is unknown."""
        found = find_broker_address_in_admin(self.broker_addrs.get(broker_name))
        if found is None:
            await self.update_topic_route(topic)
            found = find_broker_address_in_admin(self.broker_addrs.get(broker_name))
        if found is None:
            raise MQClientError(f"The broker[{broker_name}] not exist")
        return found

    # -- a queue's offsets at its broker (RocketMQ's MQAdminImpl) --------------------------

    async def min_offset(self, mq: MessageQueue) -> int:
        """The first offset ``mq`` still stores, asked of its broker's master."""
        addr = await self.find_broker_addr_or_fetch(mq.broker_name, mq.topic)
        return await self.api.get_min_offset(addr, mq, self.config.mq_client_api_timeout_s)

    async def max_offset(self, mq: MessageQueue) -> int:
        """One past ``mq``'s last message, asked of its broker's master."""
        addr = await self.find_broker_addr_or_fetch(mq.broker_name, mq.topic)
        return await self.api.get_max_offset(addr, mq, self.config.mq_client_api_timeout_s)

    async def search_offset(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of ``mq`` stored at or after ``timestamp_ms`` (its max offset when
        every message is older), asked of its broker's master."""
        addr = await self.find_broker_addr_or_fetch(mq.broker_name, mq.topic)
        timeout_s = self.config.mq_client_api_timeout_s
        return await self.api.search_offset(addr, mq, timestamp_ms, timeout_s)

    def any_broker_addr_of(self, topic: str) -> str | None:
        """A broker serving ``topic``, for group-wide questions (RocketMQ's
        findBrokerAddrByTopic): a master if the route lists one, else a slave, so a group
        whose only master is down still learns its consumers from the slave."""
        route = self.routes.get(topic)
        if route is None:
            return None
        slaves: list[str] = []
        for broker in route.broker_datas:
            found = find_broker_address_in_admin(broker.broker_addrs)
            if found is not None and not found.slave:
                return found.broker_addr
            if found is not None:
                slaves.append(found.broker_addr)
        return slaves[0] if slaves else None

    # -- heartbeats -----------------------------------------------------------------------

    def heartbeat_data(self) -> HeartbeatData:
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(group_name=g) for g in sorted(self.producer_groups)],
            consumer_data_set=[c.consumer_data() for c in self.consumers.values()],
        )

    async def send_heartbeat_to_all_brokers(self) -> None:
        """HEART_BEAT to every known master (and, for consumers, every slave)."""
        for broker_name in list(self.broker_addrs):
            await self.send_heartbeat_to_broker(broker_name)

    async def send_heartbeat_to_broker(self, broker_name: str) -> None:
        """HEART_BEAT to the master of ``broker_name`` (and, for consumers, its slaves); a
        failure is logged, not raised: the periodic heartbeat tries again."""
        data = self.heartbeat_data()
        if not data.producer_data_set and not data.consumer_data_set:
            return
        for broker_id, addr in list(self.broker_addrs.get(broker_name, {}).items()):
            if broker_id != MASTER_ID and not data.consumer_data_set:
                continue
            try:
                await self.api.send_heartbeat(addr, data, self.config.mq_client_api_timeout_s)
            except Exception as exc:
                log.warning("heartbeat to %s (%s) failed: %s", broker_name, addr, exc)


def own_or_borrow(
    instance: MQClientInstance | None, namesrv_addr: str | None, client_config: ClientConfig | None
) -> tuple[MQClientInstance, bool]:
    """The instance a producer or consumer runs on, and whether it owns it: ``instance``,
    borrowed (shared with other clients, so their owner shuts it down), or else a new one of
    its own made from ``client_config_for(namesrv_addr, client_config)``."""
    config = client_config_for(namesrv_addr, client_config)
    if instance is not None:
        return instance, False
    return MQClientInstance(config), True


def route_failure(topic: str, failures: list[tuple[str, Exception]]) -> Exception:
    """One line for name servers that gave no route of ``topic``: each address with its
    cause, and the fix. A lone WrongServerError already says all of that: it is kept."""
    if len(failures) == 1:
        addr, error = failures[0]
        if isinstance(error, WrongServerError):
            return error
        return MQClientError(
            f"no route of topic {topic} from name server {addr}: {error}; "
            "check namesrv_addr and that the name server is running"
        )
    causes = "; ".join(f"{addr}: {error}" for addr, error in failures)
    return MQClientError(
        f"no route of topic {topic} from any name server ({causes}); "
        "check namesrv_addr and that the name servers are running"
    )


def publish_info_of(topic: str, route: TopicRouteData) -> TopicPublishInfo:
    """The writable queues of a route, in RocketMQ's order (queue data sorted by broker)."""
    if route.order_topic_conf:
        # "brokerName:queueNums;..." fixes the ordered topic's queues.
        queues: list[MessageQueue] = []
        for item in route.order_topic_conf.split(";"):
            name, _, count = item.partition(":")
            queues.extend(MessageQueue(topic, name, i) for i in range(int(count)))
        return TopicPublishInfo(queues, order_topic=True)
    queues = []
    counts: dict[str, int] = {}
    masters = {b.broker_name for b in route.broker_datas if MASTER_ID in b.broker_addrs}
    for qd in sorted(route.queue_datas, key=lambda q: q.broker_name):
        if not qd.perm & PERM_WRITE or qd.broker_name not in masters:
            continue
        counts[qd.broker_name] = qd.write_queue_nums
        queues.extend(MessageQueue(topic, qd.broker_name, i) for i in range(qd.write_queue_nums))
    return TopicPublishInfo(queues, counts)


def subscribe_queues_of(topic: str, route: TopicRouteData) -> set[MessageQueue]:
    """The readable queues of a route (RocketMQ's topicRouteData2TopicSubscribeInfo)."""
    return {
        MessageQueue(topic, qd.broker_name, i)
        for qd in route.queue_datas
        if qd.perm & PERM_READ
        for i in range(qd.read_queue_nums)
    }


class _ClientRemotingProcessor(CodeDispatchingProcessor):
    """Answers the requests brokers send to this client (RocketMQ's ClientRemotingProcessor):
    NOTIFY_CONSUMER_IDS_CHANGED (40), the group's consumers changed, rebalance; and
    RESET_CONSUMER_CLIENT_OFFSET (220), an admin moved the group's offsets, so the consumer
    drops the topic's queues and starts them again from the new offsets; and
    CHECK_TRANSACTION_STATE (39), what became of a half message, passed to its group's
    transactional producer. Owns the tasks of resets under way; runs on the instance's
    event loop."""

    def __init__(self, instance: MQClientInstance) -> None:
        self._instance = instance
        self._tasks: set[asyncio.Task[None]] = set()
        super().__init__(
            {
                RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._notify_consumer_ids_changed,
                RequestCode.RESET_CONSUMER_CLIENT_OFFSET: self._reset_offset,
                RequestCode.CHECK_TRANSACTION_STATE: self._check_transaction_state,
            }
        )

    async def _notify_consumer_ids_changed(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = NotifyConsumerIdsChangedRequestHeader.from_ext_fields(request.ext_fields)
        consumer = self._instance.consumers.get(header.consumer_group)
        if consumer is not None:
            log.info("consumer ids of %s changed: rebalance", header.consumer_group)
            consumer.rebalance_now()
        return _success(request)

    async def _reset_offset(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = ResetOffsetRequestHeader.from_ext_fields(request.ext_fields)
        consumer = self._instance.consumers.get(header.group)
        if isinstance(consumer, ResettableConsumer):
            offsets = ResetOffsetBody.from_json(request.body).offset_table
            log.info("reset of %s in %s: %s", header.group, header.topic, offsets)
            # The reset talks to brokers itself: not inside this request's handling.
            task = asyncio.create_task(consumer.reset_offset(header.topic, offsets))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        elif consumer is not None:
            # As RocketMQ's client, only a push consumer follows a reset; a lite pull
            # consumer owns its offsets and commits them again. The broker changed nothing
            # either (it leaves online groups to their consumers): say why nothing moved.
            log.warning(
                "[reset-offset] reset of %s in %s ignored: only a push consumer follows it; "
                "stop the group's lite pull consumers, then reset",
                header.group,
                header.topic,
            )
        return _success(request)

    async def _check_transaction_state(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
        msg = decode_message(request.body)
        group = msg.properties.get(mc.PROPERTY_PRODUCER_GROUP)
        checker = self._instance.transaction_checkers.get(group) if group else None
        if checker is None:
            log.warning(
                "check of half %s of group %s: no transaction listener here", header.msg_id, group
            )
            return _success(request)  # the broker checks again later
        # The broker that asks is the one to answer; its name finds its listening address.
        addr = ctx.remote_address
        if header.broker_name:
            addr = self._instance.find_broker_addr(header.broker_name) or addr
        checker.check_transaction_state(addr, msg, header)
        return _success(request)


def _success(request: RemotingCommand) -> RemotingCommand | None:
    """SUCCESS, unless the broker sent the request oneway (it waits for nothing)."""
    if request.is_oneway:
        return None
    return RemotingCommand.create_response(request, ResponseCode.SUCCESS)
