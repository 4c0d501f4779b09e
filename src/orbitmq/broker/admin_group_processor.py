"""``AdminGroupProcessor``: the admin requests about consumer groups and the clients connected
to the broker (served by RocketMQ's ``AdminBrokerProcessor``):

- UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): a group's settings, persisted;
- GET_CONSUMER_CONNECTION_LIST (203), GET_PRODUCER_CONNECTION_LIST (204): who is online;
- QUERY_TOPIC_CONSUME_BY_WHO (300): the groups online for a topic or with offsets in it;
- GET_CONSUMER_RUNNING_INFO (307), CONSUME_MESSAGE_DIRECTLY (309): relayed to one client of
  the group over its own connection, and the client's answer returned as it is
  (RocketMQ's ``callConsumer``).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from orbitmq.broker.admin_broker_processor import SLAVE_REMARK
from orbitmq.broker.consumer_manager import ClientChannelInfo, ConsumerManager
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.common import MessageFormatError, decode_message_id
from orbitmq.filter import SubscriptionData
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import (
    Connection,
    ConsumerConnection,
    GroupList,
    ProducerConnection,
    SubscriptionGroupConfig,
)
from orbitmq.protocol.body import SubscriptionData as SubscriptionDataBody
from orbitmq.protocol.header import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetProducerConnectionListRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from orbitmq.protocol.processor_codes import ADMIN_GROUP_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor, RemotingTimeoutError
from orbitmq.store import MessageStore
from orbitmq.store.message_store_config import BrokerRole

log = logging.getLogger(__name__)

#: ``MQVersion.Version.V3_1_8_SNAPSHOT.ordinal()``: older clients cannot answer relayed
#: requests, and RocketMQ refuses to ask them.
V3_1_8_SNAPSHOT: Final = 77
#: How long a relayed request waits for the client (RocketMQ's Broker2Client.callClient).
CALL_CLIENT_TIMEOUT_S: Final = 10.0


def connection_of(info: ClientChannelInfo) -> Connection:
    return Connection(
        client_id=info.client_id,
        client_addr=info.channel.remote_address,
        language=info.language,
        version=info.version,
    )


def subscription_body(sub: SubscriptionData) -> SubscriptionDataBody:
    """The wire form of a subscription the consumer registry holds."""
    return SubscriptionDataBody(
        topic=sub.topic,
        sub_string=sub.sub_string,
        tags_set=set(sub.tags_set),
        code_set=set(sub.code_set),
        sub_version=sub.sub_version,
        expression_type=sub.expression_type,
    )


class AdminGroupProcessor(CodeDispatchingProcessor):
    """Reads the client registries and the offset table; writes only the group table (in a
    worker thread, as it saves subscriptionGroup.json). Event-loop confined."""

    REQUEST_CODES: Final = ADMIN_GROUP_CODES

    def __init__(
        self,
        broker_name: str,
        store: MessageStore,
        subscription_group_manager: SubscriptionGroupManager,
        consumer_manager: ConsumerManager,
        producer_manager: ProducerManager,
        consumer_offset_manager: ConsumerOffsetManager,
        *,
        broker_role: BrokerRole = BrokerRole.ASYNC_MASTER,
        call_client_timeout_s: float = CALL_CLIENT_TIMEOUT_S,
    ) -> None:
        super().__init__(
            {
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.update_subscription_group,
                RequestCode.GET_CONSUMER_CONNECTION_LIST: self.get_consumer_connection_list,
                RequestCode.GET_PRODUCER_CONNECTION_LIST: self.get_producer_connection_list,
                RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.query_topic_consume_by_who,
                RequestCode.GET_CONSUMER_RUNNING_INFO: self.get_consumer_running_info,
                RequestCode.CONSUME_MESSAGE_DIRECTLY: self.consume_message_directly,
            }
        )
        self.broker_name = broker_name
        self.store = store
        self.subscription_group_manager = subscription_group_manager
        self.consumer_manager = consumer_manager
        self.producer_manager = producer_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.broker_role = broker_role
        self.call_client_timeout_s = call_client_timeout_s

    async def update_subscription_group(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        if self.broker_role is BrokerRole.SLAVE:
            return RemotingCommand.create_response(request, ResponseCode.SYSTEM_ERROR, SLAVE_REMARK)
        log.info("updateAndCreateSubscriptionGroup called by %s", ctx.remote_address)
        if request.body:
            config = SubscriptionGroupConfig.from_json(request.body)
            if not config.group_name:
                return RemotingCommand.create_response(
                    request,
                    ResponseCode.SYSTEM_ERROR,
                    "groupName: a subscription group needs a name",
                )
            await asyncio.to_thread(
                self.subscription_group_manager.update_subscription_group_config, config
            )
        return RemotingCommand.create_success(request)

    async def get_consumer_connection_list(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        info = self.consumer_manager.get_consumer_group_info(header.consumer_group)
        if info is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"the consumer group[{header.consumer_group}] not online",
            )
        body = ConsumerConnection(
            connection_set=sorted(
                (connection_of(c) for c in info.channel_info_table.values()),
                key=lambda c: c.client_id,
            ),
            subscription_table={
                topic: subscription_body(sub) for topic, sub in info.subscription_table.items()
            },
            consume_type=info.consume_type,
            message_model=info.message_model,
            consume_from_where=info.consume_from_where,
        )
        return RemotingCommand.create_success(request, body=body.to_json())

    async def get_producer_connection_list(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetProducerConnectionListRequestHeader.from_ext_fields(request.ext_fields)
        channels = self.producer_manager.get_group_channel_table(header.producer_group)
        if not channels:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"the producer group[{header.producer_group}] not exist",
            )
        body = ProducerConnection(
            connection_set=sorted(
                (connection_of(c) for c in channels.values()), key=lambda c: c.client_id
            )
        )
        return RemotingCommand.create_success(request, body=body.to_json())

    async def query_topic_consume_by_who(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = QueryTopicConsumeByWhoRequestHeader.from_ext_fields(request.ext_fields)
        groups = self.consumer_manager.query_topic_consume_by_who(header.topic)
        groups |= self.consumer_offset_manager.which_group_by_topic(header.topic)
        return RemotingCommand.create_success(request, body=GroupList(groups).to_json())

    async def get_consumer_running_info(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        return await self._call_consumer(
            request, header.consumer_group, header.client_id, request.ext_fields, request.body
        )

    async def consume_message_directly(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        """The stored message named by msgId goes to the client as the body, with this
        broker's name added to the fields (the client builds the MessageQueue from it)."""
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        record = None
        try:
            if header.msg_id:
                _, offset = decode_message_id(header.msg_id)
                record = self.store.select_one_message_by_offset(offset)
        except MessageFormatError:
            record = None
        if record is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"no message {header.msg_id} in broker {self.broker_name}",
            )
        fields = {**request.ext_fields, "brokerName": self.broker_name}
        return await self._call_consumer(
            request, header.consumer_group, header.client_id or "", fields, bytes(record)
        )

    async def _call_consumer(
        self,
        request: RemotingCommand,
        group: str,
        client_id: str,
        ext_fields: dict[str, str],
        body: bytes,
    ) -> RemotingCommand:
        """Send ``request``'s code with ``ext_fields`` and ``body`` to the group's client
        ``client_id`` over its own connection; answer ``request`` with what it said."""
        info = self.consumer_manager.find_channel(group, client_id)
        if info is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{group}> <{client_id}> not online",
            )
        if info.version < V3_1_8_SNAPSHOT:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"The Consumer <{client_id}> Version <{info.version}> too low to finish, "
                "please upgrade it to V3_1_8_SNAPSHOT",
            )
        relayed = RemotingCommand.create_request(request.code, dict(ext_fields), body)
        try:
            answer = await info.channel.invoke(relayed, self.call_client_timeout_s)
        except RemotingTimeoutError as exc:
            return RemotingCommand.create_response(
                request,
                ResponseCode.CONSUME_MSG_TIMEOUT,
                f"consumer <{group}> <{client_id}> Timeout: {exc}",
            )
        except Exception as exc:  # a closed connection, a failed write: the admin is told
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: {exc}",
            )
        response = RemotingCommand.create_response(request, answer.code, answer.remark)
        response.ext_fields = dict(answer.ext_fields)
        response.body = answer.body
        return response
