"""``BrokerOuterAPI``: the broker's requests to other servers (RocketMQ's
``BrokerOuterAPI``): REGISTER_BROKER to every name server at once and UNREGISTER_BROKER at
shutdown (failures logged and reported per address, never raised), and a slave's four
GET_ALL_* requests to its master (failures raised as ``MasterSyncError``)."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from orbitmq.broker.subscription_group_config import SubscriptionGroupWrapper
from orbitmq.common import crc32
from orbitmq.common.errors import OrbitError
from orbitmq.protocol import (
    ProtocolError,
    RegisterBrokerBody,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicConfigSerializeWrapper,
    UnRegisterBrokerRequestHeader,
    wrong_server_problem,
)
from orbitmq.protocol.body import ConsumerOffsetSerializeWrapper, KVTable
from orbitmq.remoting import RemotingClient, TlsSystemConfig

log = logging.getLogger(__name__)

#: RocketMQ's BrokerOuterAPI waits 3 s for each of a slave's GET_ALL_* requests.
MASTER_SYNC_TIMEOUT_S = 3.0


class MasterSyncError(OrbitError):
    """A GET_ALL_* request to the master failed or was refused (the message says which)."""


def _refusal(addr: str, request: RemotingCommand, response: RemotingCommand) -> str:
    """A name server's refusal in one line; when ``addr`` turns out to be no name server
    (a namesrvAddr pointing at a broker), what to put in namesrvAddr instead."""
    problem = wrong_server_problem(addr, request.code, response.code)
    if problem is not None:
        return f"{problem} (the broker's namesrvAddr)"
    return f"code {response.code} {response.remark}"


@dataclass(frozen=True, slots=True)
class BrokerIdentity:
    """What a broker tells the name servers about itself."""

    cluster_name: str
    broker_name: str
    broker_id: int
    broker_addr: str
    ha_server_addr: str


@dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """One name server's answer (RocketMQ's RegisterBrokerResult): the master's addresses,
    for slaves, and the topics of its ORDER_TOPIC_CONFIG (None: it sent no table)."""

    namesrv_addr: str
    ha_server_addr: str | None
    master_addr: str | None
    order_topics: frozenset[str] | None = None


class BrokerOuterAPI:
    """Owns one ``RemotingClient`` (one connection per name server). Use from one loop.
    ``tls``: the broker's tls.* settings; with tls.enable its connections are TLS, as
    RocketMQ's BrokerOuterAPI follows the client settings."""

    def __init__(
        self, client: RemotingClient | None = None, tls: TlsSystemConfig | None = None
    ) -> None:
        ssl = tls.outgoing_context() if tls is not None else None
        self.client = client or RemotingClient(ssl=ssl)

    async def register_broker_all(
        self,
        namesrv_addresses: list[str],
        broker: BrokerIdentity,
        topic_config_wrapper: TopicConfigSerializeWrapper,
        timeout_s: float,
        filter_server_list: list[str] | None = None,
    ) -> list[RegisterBrokerResult]:
        """Register with every name server concurrently; the answers of those that
        accepted (the others are logged)."""
        if not namesrv_addresses:
            return []
        body = RegisterBrokerBody(topic_config_wrapper, list(filter_server_list or [])).encode(
            compressed=False
        )
        header = RegisterBrokerRequestHeader(
            broker_name=broker.broker_name,
            broker_addr=broker.broker_addr,
            cluster_name=broker.cluster_name,
            ha_server_addr=broker.ha_server_addr,
            broker_id=broker.broker_id,
            compressed=False,
            body_crc32=crc32(body),
        )
        ext = header.to_ext_fields()
        results = await asyncio.gather(
            *(self._register(addr, ext, body, timeout_s) for addr in namesrv_addresses)
        )
        return [r for r in results if r is not None]

    async def _register(
        self, addr: str, ext: dict[str, str], body: bytes, timeout_s: float
    ) -> RegisterBrokerResult | None:
        request = RemotingCommand.create_request(RequestCode.REGISTER_BROKER, dict(ext), body)
        try:
            response = await self.client.invoke(addr, request, timeout_s)
        except Exception as exc:
            log.warning("registerBroker to name server %s failed: %s", addr, exc)
            return None
        if response.code != ResponseCode.SUCCESS:
            log.warning(
                "registerBroker to name server %s refused: %s",
                addr,
                _refusal(addr, request, response),
            )
            return None
        answer = RegisterBrokerResponseHeader.from_ext_fields(response.ext_fields)
        log.info("registered with name server %s", addr)
        order_topics = None
        if response.body:
            try:
                order_topics = frozenset(KVTable.from_json(response.body).table)
            except ProtocolError as exc:  # a bad table must not cost the registration
                log.warning("name server %s sent an unreadable order topic table: %s", addr, exc)
        return RegisterBrokerResult(addr, answer.ha_server_addr, answer.master_addr, order_topics)

    async def unregister_broker_all(
        self, namesrv_addresses: list[str], broker: BrokerIdentity, timeout_s: float
    ) -> None:
        """UNREGISTER_BROKER to every name server concurrently; failures are logged."""
        header = UnRegisterBrokerRequestHeader(
            broker_name=broker.broker_name,
            broker_addr=broker.broker_addr,
            cluster_name=broker.cluster_name,
            broker_id=broker.broker_id,
        )
        ext = header.to_ext_fields()
        await asyncio.gather(*(self._unregister(a, ext, timeout_s) for a in namesrv_addresses))

    async def _unregister(self, addr: str, ext: dict[str, str], timeout_s: float) -> None:
        request = RemotingCommand.create_request(RequestCode.UNREGISTER_BROKER, dict(ext))
        try:
            response = await self.client.invoke(addr, request, timeout_s)
        except Exception as exc:
            log.warning("unregisterBroker from name server %s failed: %s", addr, exc)
            return
        if response.code != ResponseCode.SUCCESS:
            log.warning(
                "unregisterBroker from name server %s refused: %s",
                addr,
                _refusal(addr, request, response),
            )
        else:
            log.info("unregistered from name server %s", addr)

    # -- a slave's copy of its master's metadata (RocketMQ's SlaveSynchronize) --------------

    async def get_all_topic_config(self, master_addr: str) -> TopicConfigSerializeWrapper:
        """GET_ALL_TOPIC_CONFIG (21). RocketMQ 4.9.8 asks it on the master's VIP port
        (listenPort - 2), which an OrbitMQ master serves too; we ask the listen port: it is
        the address the name server gives, and a master on port 0 has its VIP port elsewhere."""
        body = await self._get_all(master_addr, RequestCode.GET_ALL_TOPIC_CONFIG)
        return TopicConfigSerializeWrapper.from_json(body)

    async def get_all_consumer_offset(self, master_addr: str) -> ConsumerOffsetSerializeWrapper:
        """GET_ALL_CONSUMER_OFFSET (43)."""
        body = await self._get_all(master_addr, RequestCode.GET_ALL_CONSUMER_OFFSET)
        return ConsumerOffsetSerializeWrapper.from_json(body)

    async def get_all_delay_offset(self, master_addr: str) -> bytes:
        """GET_ALL_DELAY_OFFSET (45): delayOffset.json's text, as the master has it."""
        return await self._get_all(master_addr, RequestCode.GET_ALL_DELAY_OFFSET)

    async def get_all_subscription_group_config(self, master_addr: str) -> SubscriptionGroupWrapper:
        """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201)."""
        body = await self._get_all(master_addr, RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
        return SubscriptionGroupWrapper.from_json(body)

    async def _get_all(self, addr: str, code: int) -> bytes:
        request = RemotingCommand.create_request(code, {})
        try:
            response = await self.client.invoke(addr, request, MASTER_SYNC_TIMEOUT_S)
        except Exception as exc:
            raise MasterSyncError(f"request code {code} to master {addr} failed: {exc}") from exc
        if response.code != ResponseCode.SUCCESS:
            raise MasterSyncError(
                f"master {addr} refused request code {code}: code {response.code} {response.remark}"
            )
        return response.body or b""

    async def close(self) -> None:
        await self.client.close()
