"""Headers of queries on a broker's queues and messages: offset bounds, offsets by time,
messages by commit log offset and by key."""

from __future__ import annotations

from orbitmq.protocol.header.command_header import CommandHeader, Int32, ext_field


class GetMaxOffsetRequestHeader(CommandHeader):
    """GET_MAX_OFFSET (30): the queue offset one past the last message."""

    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    broker_name: str | None = ext_field("bname", default=None)


class GetMaxOffsetResponseHeader(CommandHeader):
    offset: int = ext_field("offset")


class GetMinOffsetRequestHeader(CommandHeader):
    """GET_MIN_OFFSET (31): the queue offset of the oldest message kept."""

    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    broker_name: str | None = ext_field("bname", default=None)


class GetMinOffsetResponseHeader(CommandHeader):
    offset: int = ext_field("offset")


class SearchOffsetRequestHeader(CommandHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP (29): the queue offset of the first message stored at or
    after ``timestamp`` (epoch milliseconds)."""

    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    timestamp: int = ext_field("timestamp")
    broker_name: str | None = ext_field("bname", default=None)


class SearchOffsetResponseHeader(CommandHeader):
    offset: int = ext_field("offset")


class GetEarliestMsgStoretimeRequestHeader(CommandHeader):
    """GET_EARLIEST_MSG_STORETIME (32)."""

    topic: str = ext_field("topic")
    queue_id: Int32 = ext_field("queueId")
    broker_name: str | None = ext_field("bname", default=None)


class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    """The store time (epoch milliseconds) of the queue's oldest message."""

    timestamp: int = ext_field("timestamp")


class ViewMessageRequestHeader(CommandHeader):
    """VIEW_MESSAGE_BY_ID (33): ``offset`` is the commit log (physical) offset decoded from an
    offset message id."""

    offset: int = ext_field("offset")


class QueryMessageRequestHeader(CommandHeader):
    """QUERY_MESSAGE (12): up to ``max_num`` messages of ``topic`` indexed under ``key`` (a
    message key or unique id) and stored between the two timestamps (epoch milliseconds)."""

    topic: str = ext_field("topic")
    key: str = ext_field("key")
    max_num: Int32 = ext_field("maxNum")
    begin_timestamp: int = ext_field("beginTimestamp")
    end_timestamp: int = ext_field("endTimestamp")


class QueryMessageResponseHeader(CommandHeader):
    """How current the index that answered is."""

    index_last_update_timestamp: int = ext_field("indexLastUpdateTimestamp")
    index_last_update_phyoffset: int = ext_field("indexLastUpdatePhyoffset")
