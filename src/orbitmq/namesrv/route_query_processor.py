"""``RouteQueryProcessor``: the route reads clients and admin tools send to a name server,
and the admin writes on routes (the route half of RocketMQ's ``DefaultRequestProcessor``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from orbitmq.namesrv.kv_config_manager import KVConfigManager
from orbitmq.namesrv.route_info_manager import RouteInfoManager
from orbitmq.protocol import (
    NAMESPACE_ORDER_TOPIC_CONFIG,
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicList,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from orbitmq.protocol.faq_url import FAQ_SUGGESTION
from orbitmq.protocol.processor_codes import ROUTE_QUERY_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor, Handler

log = logging.getLogger(__name__)

#: RocketMQ's TOPIC_NOT_EXIST remark (with ``FAQUrl.suggestTodo(APPLY_TOPIC_URL)``); clients
#: print it, so it is kept byte for byte.
TOPIC_NOT_EXIST_REMARK: Final = (
    "No topic route info in name server for the topic: {topic}" + FAQ_SUGGESTION
)


class RouteQueryProcessor(CodeDispatchingProcessor):
    """Answers route queries and route admin codes. Owns no state (the tables are the
    ``RouteInfoManager``'s, order-topic settings the ``KVConfigManager``'s; both
    thread-safe), so requests may run concurrently.

    Route JSON is always standard JSON (quoted map keys): RocketMQ 4.9.8 sends it to clients
    of version 4.9.4 and later, and the C++ clients read it as well.
    """

    REQUEST_CODES: Final = ROUTE_QUERY_CODES

    def __init__(
        self, routes: RouteInfoManager, kv_config: KVConfigManager, order_message_enable: bool
    ) -> None:
        self._routes = routes
        self._kv_config = kv_config
        self._order_message_enable = order_message_enable
        super().__init__(
            {
                RequestCode.GET_ROUTEINFO_BY_TOPIC: self._get_route_info_by_topic,
                RequestCode.GET_BROKER_CLUSTER_INFO: self._get_broker_cluster_info,
                RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self._topic_list(
                    routes.get_all_topic_list
                ),
                RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self._topic_list(
                    routes.get_system_topic_list
                ),
                RequestCode.GET_UNIT_TOPIC_LIST: self._topic_list(routes.get_unit_topics),
                RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self._topic_list(
                    routes.get_has_unit_sub_topic_list
                ),
                RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self._topic_list(
                    routes.get_has_unit_sub_un_unit_topic_list
                ),
                RequestCode.GET_TOPICS_BY_CLUSTER: self._get_topics_by_cluster,
                RequestCode.DELETE_TOPIC_IN_NAMESRV: self._delete_topic_in_namesrv,
                RequestCode.WIPE_WRITE_PERM_OF_BROKER: self._wipe_write_perm_of_broker,
                RequestCode.ADD_WRITE_PERM_OF_BROKER: self._add_write_perm_of_broker,
            }
        )

    async def _get_route_info_by_topic(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetRouteInfoRequestHeader.from_ext_fields(request.ext_fields)
        route = self._routes.pickup_topic_route_data(header.topic)
        if route is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.TOPIC_NOT_EXIST,
                TOPIC_NOT_EXIST_REMARK.format(topic=header.topic),
            )
        if self._order_message_enable:
            route.order_topic_conf = self._kv_config.get_kv_config(
                NAMESPACE_ORDER_TOPIC_CONFIG, header.topic
            )
        return RemotingCommand.create_success(request, body=route.to_json())

    async def _get_broker_cluster_info(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        return RemotingCommand.create_success(
            request, body=self._routes.get_all_cluster_info().to_json()
        )

    @staticmethod
    def _topic_list(query: Callable[[], TopicList]) -> Handler:
        async def handle(ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
            return RemotingCommand.create_success(request, body=query().to_json())

        return handle

    async def _get_topics_by_cluster(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetTopicsByClusterRequestHeader.from_ext_fields(request.ext_fields)
        return RemotingCommand.create_success(
            request, body=self._routes.get_topics_by_cluster(header.cluster).to_json()
        )

    async def _delete_topic_in_namesrv(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = DeleteTopicFromNamesrvRequestHeader.from_ext_fields(request.ext_fields)
        self._routes.delete_topic(header.topic, header.cluster_name or None)
        return RemotingCommand.create_success(request)

    async def _wipe_write_perm_of_broker(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = WipeWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self._routes.wipe_write_perm_of_broker(header.broker_name)
        _log_write_perm_change("wipe", header.broker_name, ctx, count)
        response_header = WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count)
        return RemotingCommand.create_success(request, response_header)

    async def _add_write_perm_of_broker(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = AddWritePermOfBrokerRequestHeader.from_ext_fields(request.ext_fields)
        count = self._routes.add_write_perm_of_broker(header.broker_name)
        _log_write_perm_change("add", header.broker_name, ctx, count)
        response_header = AddWritePermOfBrokerResponseHeader(add_topic_count=count)
        return RemotingCommand.create_success(request, response_header)


def _log_write_perm_change(change: str, broker_name: str, ctx: ChannelContext, count: int) -> None:
    log.info(
        "%s write perm of broker[%s], client: %s, %d",
        change,
        broker_name,
        ctx.remote_address,
        count,
    )
