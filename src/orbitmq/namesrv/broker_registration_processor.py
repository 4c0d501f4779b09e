"""``BrokerRegistrationProcessor``: REGISTER_BROKER, UNREGISTER_BROKER and QUERY_DATA_VERSION
(the broker-facing half of RocketMQ's ``DefaultRequestProcessor``)."""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.common import crc32
from orbitmq.namesrv.kv_config_manager import KVConfigManager
from orbitmq.namesrv.route_info_manager import RouteInfoManager
from orbitmq.protocol import (
    NAMESPACE_ORDER_TOPIC_CONFIG,
    DataVersion,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerBody,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicConfigSerializeWrapper,
    UnRegisterBrokerRequestHeader,
)
from orbitmq.protocol.processor_codes import BROKER_REGISTRATION_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor

log = logging.getLogger(__name__)

#: RocketMQ's remark when the body does not match its header's bodyCrc32.
CRC32_NOT_MATCH_REMARK: Final = "crc32 not match"


class BrokerRegistrationProcessor(CodeDispatchingProcessor):
    """Answers the codes brokers send to a name server. Owns no state: the route table is
    the ``RouteInfoManager``'s, the order-topic configuration the ``KVConfigManager``'s.
    Both are thread-safe, so requests may run concurrently."""

    REQUEST_CODES: Final = BROKER_REGISTRATION_CODES

    def __init__(self, routes: RouteInfoManager, kv_config: KVConfigManager) -> None:
        self._routes = routes
        self._kv_config = kv_config
        super().__init__(
            {
                RequestCode.REGISTER_BROKER: self._register_broker,
                RequestCode.UNREGISTER_BROKER: self._unregister_broker,
                RequestCode.QUERY_DATA_VERSION: self._query_data_version,
            }
        )

    async def _register_broker(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = RegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        if header.body_crc32 != 0 and crc32(request.body) != header.body_crc32:
            log.warning(
                "receive registerBroker request,crc32 not match,from %s", ctx.remote_address
            )
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, CRC32_NOT_MATCH_REMARK
            )
        if request.body:
            body = RegisterBrokerBody.decode(request.body, header.compressed)
        else:
            # RocketMQ: no body is an empty table at version 0 / timestamp 0.
            body = RegisterBrokerBody(TopicConfigSerializeWrapper({}, DataVersion(0, 0)))
        result = self._routes.register_broker(
            header.cluster_name,
            header.broker_addr,
            header.broker_name,
            header.broker_id,
            header.ha_server_addr,
            body.topic_config_serialize_wrapper,
            body.filter_server_list,
            ctx,
        )
        response_header = RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        )
        order_topics = self._kv_config.get_kv_list_by_namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return RemotingCommand.create_success(
            request,
            header=response_header,
            body=b"" if order_topics is None else order_topics.to_json(),
        )

    async def _unregister_broker(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = UnRegisterBrokerRequestHeader.from_ext_fields(request.ext_fields)
        self._routes.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        return RemotingCommand.create_success(request)

    async def _query_data_version(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = QueryDataVersionRequestHeader.from_ext_fields(request.ext_fields)
        version = DataVersion.from_json(request.body)
        changed = self._routes.is_broker_topic_config_changed(header.broker_addr, version)
        if not changed:
            self._routes.update_broker_info_update_timestamp(header.broker_addr)
        current = self._routes.query_broker_topic_config(header.broker_addr)
        return RemotingCommand.create_success(
            request,
            header=QueryDataVersionResponseHeader(changed=changed),
            body=b"" if current is None else current.to_json(),
        )
