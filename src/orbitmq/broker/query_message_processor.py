"""``QueryMessageProcessor``: QUERY_MESSAGE (12) and VIEW_MESSAGE_BY_ID (33) (RocketMQ's
``QueryMessageProcessor``): messages found through the index by key, and one message by its
commit log offset. Both answer the stored records themselves as the body."""

from __future__ import annotations

import asyncio
from typing import Final

from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from orbitmq.protocol.processor_codes import QUERY_MESSAGE_CODES
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor
from orbitmq.store import MessageStore, MessageStoreConfig

#: RocketMQ's ``MixAll.UNIQUE_MSG_QUERY_FLAG``: the key is a unique id (UNIQ_KEY), so
#: ``maxNum`` is replaced by the store's ``defaultQueryMaxNum``.
UNIQUE_MSG_QUERY_FLAG: Final = "_UNIQUE_KEY_QUERY"


class QueryMessageProcessor(CodeDispatchingProcessor):
    """Answers queries on stored messages. Holds no state; safe from several tasks."""

    REQUEST_CODES: Final = QUERY_MESSAGE_CODES

    def __init__(self, store_config: MessageStoreConfig, store: MessageStore) -> None:
        super().__init__(
            {
                RequestCode.QUERY_MESSAGE: self.query_message,
                RequestCode.VIEW_MESSAGE_BY_ID: self.view_message_by_id,
            }
        )
        self.store_config = store_config
        self.store = store

    async def query_message(self, ctx: ChannelContext, request: RemotingCommand) -> RemotingCommand:
        header = QueryMessageRequestHeader.from_ext_fields(request.ext_fields)
        max_num = header.max_num
        if request.ext_fields.get(UNIQUE_MSG_QUERY_FLAG) == "true":
            max_num = self.store_config.default_query_max_num
        # The index is read through files: keep it off the loop.
        result = await asyncio.to_thread(
            self._query,
            header.topic,
            header.key,
            max_num,
            header.begin_timestamp,
            header.end_timestamp,
        )
        body, last_timestamp, last_phy_offset = result
        response_header = QueryMessageResponseHeader(
            index_last_update_timestamp=last_timestamp,
            index_last_update_phyoffset=last_phy_offset,
        )
        if body:
            return RemotingCommand.create_success(request, header=response_header, body=body)
        return RemotingCommand.create_response(
            request,
            ResponseCode.QUERY_NOT_FOUND,
            "can not find message, maybe time range not correct",
            ext_fields=response_header.to_ext_fields(),
        )

    def _query(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> tuple[bytes, int, int]:
        """The matching records back to back (copied out of the mapped files) and the
        index's last update timestamp and physical offset."""
        result = self.store.query_message(topic, key, max_num, begin, end)
        body = b"".join(bytes(record) for record in result.message_buffers)
        return body, result.index_last_update_timestamp, result.index_last_update_phy_offset

    async def view_message_by_id(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = ViewMessageRequestHeader.from_ext_fields(request.ext_fields)
        record = self.store.select_one_message_by_offset(header.offset)
        if record is None:
            return RemotingCommand.create_response(
                request,
                ResponseCode.SYSTEM_ERROR,
                f"can not find message by the offset, {header.offset}",
            )
        return RemotingCommand.create_success(request, body=bytes(record))
