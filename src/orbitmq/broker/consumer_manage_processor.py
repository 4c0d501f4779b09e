"""``ConsumerManageProcessor``: GET_CONSUMER_LIST_BY_GROUP (38), QUERY_CONSUMER_OFFSET (14)
and UPDATE_CONSUMER_OFFSET (15) (RocketMQ's ``ConsumerManageProcessor``)."""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.broker.consumer_manager import ConsumerManager
from orbitmq.broker.consumer_offset_manager import ConsumerOffsetManager
from orbitmq.protocol import (
    GetConsumerListByGroupResponseBody,
    RemotingCommand,
    RequestCode,
    ResponseCode,
)
from orbitmq.protocol.header import (
    GetConsumerListByGroupRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from orbitmq.protocol.processor_codes import CONSUMER_MANAGE_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import MessageStore

log = logging.getLogger(__name__)

#: RocketMQ 4.9's remark when a group has no committed offset and the queue does not begin
#: at 0 any more.
OFFSET_NOT_FOUND_REMARK: Final = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"


class ConsumerManageProcessor(CodeDispatchingProcessor):
    """Answers a consumer's questions about its group's members and committed offsets.
    Holds no state; event-loop confined (the consumer registry is)."""

    REQUEST_CODES: Final = CONSUMER_MANAGE_CODES

    def __init__(
        self,
        consumer_manager: ConsumerManager,
        consumer_offset_manager: ConsumerOffsetManager,
        store: MessageStore,
    ) -> None:
        super().__init__(
            {
                RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.get_consumer_list_by_group,
                RequestCode.QUERY_CONSUMER_OFFSET: self.query_consumer_offset,
                RequestCode.UPDATE_CONSUMER_OFFSET: self.update_consumer_offset,
            }
        )
        self.consumer_manager = consumer_manager
        self.consumer_offset_manager = consumer_offset_manager
        self.store = store

    async def get_consumer_list_by_group(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumerListByGroupRequestHeader.from_ext_fields(request.ext_fields)
        group = header.consumer_group
        info = self.consumer_manager.get_consumer_group_info(group)
        if info is not None:
            client_ids = info.all_client_ids()
            if client_ids:
                body = GetConsumerListByGroupResponseBody(consumer_id_list=client_ids)
                return RemotingCommand.create_success(request, body=body.to_json())
            log.warning("getAllClientId failed, %s %s", group, ctx.remote_address)
        else:
            log.warning("getConsumerGroupInfo failed, %s %s", group, ctx.remote_address)
        return RemotingCommand.create_response(
            request, ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}"
        )

    async def update_consumer_offset(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = UpdateConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        self.consumer_offset_manager.commit_offset(
            ctx.remote_address,
            header.consumer_group,
            header.topic,
            header.queue_id,
            header.commit_offset,
        )
        return RemotingCommand.create_success(request)

    async def query_consumer_offset(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = QueryConsumerOffsetRequestHeader.from_ext_fields(request.ext_fields)
        offset = self.consumer_offset_manager.query_offset(
            header.consumer_group, header.topic, header.queue_id
        )
        if offset < 0:
            # RocketMQ 4.9 answers 0 while the queue still begins at 0 and that first entry
            # is not swapped out of memory; we simplify to "still begins at 0".
            min_offset = self.store.get_min_offset_in_queue(header.topic, header.queue_id)
            if min_offset > 0:
                return RemotingCommand.create_response(
                    request, ResponseCode.QUERY_NOT_FOUND, OFFSET_NOT_FOUND_REMARK
                )
            offset = 0
        response_header = QueryConsumerOffsetResponseHeader(offset=offset)
        return RemotingCommand.create_success(request, header=response_header)
