"""``MQClientAPI``: every request the client makes, typed (RocketMQ's ``MQClientAPIImpl``).

One method per request code: it builds the header, sends it over the shared
``RemotingClient``, and turns the answer into a result or an ``MQBrokerError``. Nothing here
retries or chooses a broker; the producer and consumers do that.
"""

from __future__ import annotations

import zlib
from typing import Final

from orbitmq.client.consume_message_hook import MessageFilterHook
from orbitmq.client.errors import MQBrokerError, MQClientError, NoRouteError
from orbitmq.client.pull_result import PullResult, PullStatus
from orbitmq.client.send_result import SendResult, SendStatus
from orbitmq.common import (
    MessageExt,
    MessageQueue,
    decode_messages,
)
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.message import add_properties
from orbitmq.filter import SubscriptionData
from orbitmq.protocol import (
    CheckClientRequestBody,
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    TopicList,
    TopicRouteData,
    UnlockBatchRequestBody,
)
from orbitmq.protocol import SubscriptionData as SubscriptionDataBody
from orbitmq.protocol.header import (
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    EndTransactionRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetRouteInfoRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryMessageRequestHeader,
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageResponseHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewMessageRequestHeader,
)
from orbitmq.remoting import RemotingClient

#: Send answers that still mean "stored" (MQClientAPIImpl.processSendResponse).
_SEND_STATUS: Final[dict[int, SendStatus]] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
#: Pull answers (MQClientAPIImpl.processPullResponse); anything else is an error.
_PULL_STATUS: Final[dict[int, PullStatus]] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


class OffsetNotFoundError(MQBrokerError):
    """The broker has no committed offset for the group and queue (QUERY_NOT_FOUND)."""


class MQClientAPI:
    """Owns nothing but the shared ``RemotingClient``; every method is one request."""

    def __init__(self, remoting: RemotingClient) -> None:
        self.remoting = remoting

    async def _call(
        self, addr: str, code: int, ext_fields: dict[str, str], body: bytes, timeout_s: float
    ) -> RemotingCommand:
        request = RemotingCommand.create_request(code, ext_fields, body)
        return await self._invoke(addr, request, timeout_s)

    async def _invoke(
        self, addr: str, request: RemotingCommand, timeout_s: float
    ) -> RemotingCommand:
        """Every answered request goes through here: REQUEST_CODE_NOT_SUPPORTED raises at
        once, as a WrongServerError when it shows the address is the other kind of server
        (no method here expects that code as an answer)."""
        response = await self.remoting.invoke(addr, request, timeout_s)
        if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
            raise MQBrokerError.for_response(response, addr, request.code)
        return response

    async def _ok(
        self,
        addr: str,
        code: int,
        ext_fields: dict[str, str] | None = None,
        body: bytes = b"",
        timeout_s: float = 3.0,
    ) -> RemotingCommand:
        response = await self._call(addr, code, ext_fields or {}, body, timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(response, addr)
        return response

    # -- name server ----------------------------------------------------------------------

    async def get_topic_route(self, namesrv: str, topic: str, timeout_s: float) -> TopicRouteData:
        """GET_ROUTEINFO_BY_TOPIC (105). NoRouteError when the topic is unknown."""
        header = GetRouteInfoRequestHeader(topic=topic)
        response = await self._call(
            namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, header.to_ext_fields(), b"", timeout_s
        )
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            raise NoRouteError(f"No route info of this topic: {topic}")
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(response, namesrv)
        return TopicRouteData.from_json(response.body)

    async def get_topic_list(self, namesrv: str, timeout_s: float) -> list[str]:
        """GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206)."""
        response = await self._ok(
            namesrv, RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, timeout_s=timeout_s
        )
        return sorted(TopicList.from_json(response.body).topic_list)

    async def delete_topic_in_namesrv(self, namesrv: str, topic: str, timeout_s: float) -> None:
        """DELETE_TOPIC_IN_NAMESRV (216)."""
        header = DeleteTopicFromNamesrvRequestHeader(topic=topic)
        await self._ok(
            namesrv, RequestCode.DELETE_TOPIC_IN_NAMESRV, header.to_ext_fields(), b"", timeout_s
        )

    # -- sending ---------------------------------------------------------------------------

    async def send_message(
        self,
        addr: str,
        broker_name: str,
        header: SendMessageRequestHeader,
        body: bytes,
        msg_id: str,
        timeout_s: float,
    ) -> SendResult:
        """SEND_MESSAGE_V2 (310), or SEND_BATCH_MESSAGE (320) for a batch; the answer as a
        SendResult or an MQBrokerError."""
        code = RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2
        fields = header.to_v2().to_ext_fields()
        response = await self._call(addr, code, fields, body, timeout_s)
        return send_result_from(response, addr, header, broker_name, msg_id)

    async def send_message_oneway(
        self, addr: str, broker_name: str, header: SendMessageRequestHeader, body: bytes
    ) -> None:
        """The same request marked oneway: no answer comes."""
        code = RequestCode.SEND_BATCH_MESSAGE if header.batch else RequestCode.SEND_MESSAGE_V2
        request = RemotingCommand.create_request(code, header.to_v2().to_ext_fields(), body)
        await self.remoting.invoke_oneway(addr, request)

    # -- pulling ---------------------------------------------------------------------------

    async def pull_message(
        self,
        addr: str,
        header: PullMessageRequestHeader,
        subscription: SubscriptionData | None,
        timeout_s: float,
        *,
        annotate: bool = True,
        message_filter: MessageFilterHook | None = None,
    ) -> PullResult:
        """PULL_MESSAGE (11). Found messages are decoded, decompressed and checked against the
        subscription's tag strings (the broker compares hash codes only). With ``annotate``
        they also get the queue's MIN_OFFSET / MAX_OFFSET properties, as RocketMQ's
        processPullResult does; a stateless range read leaves them out, so that a message
        reads the same whenever it is read. ``message_filter`` (the consumer's own filter,
        R38) drops the messages it answers False for, as the tag re-check does."""
        response = await self._call(
            addr, RequestCode.PULL_MESSAGE, header.to_ext_fields(), b"", timeout_s
        )
        result = pull_result_of(response, addr)
        if result.pull_status is PullStatus.FOUND:
            messages = decode_client_messages(response.body)
            if subscription is not None and not takes_every_tag(subscription):
                messages = [m for m in messages if tags_match(subscription, m.tags)]
            if message_filter is not None:
                messages = [m for m in messages if message_filter(m)]
            if annotate:
                add_properties(
                    messages,
                    {
                        mc.PROPERTY_MIN_OFFSET: str(result.min_offset),
                        mc.PROPERTY_MAX_OFFSET: str(result.max_offset),
                    },
                )
            result.messages = messages
        return result

    # -- clients ---------------------------------------------------------------------------

    async def send_heartbeat(self, addr: str, heartbeat: HeartbeatData, timeout_s: float) -> None:
        """HEART_BEAT (34)."""
        await self._ok(addr, RequestCode.HEART_BEAT, body=heartbeat.to_json(), timeout_s=timeout_s)

    async def check_client_config(
        self,
        addr: str,
        client_id: str,
        group: str,
        subscription: SubscriptionData,
        timeout_s: float,
    ) -> None:
        """CHECK_CLIENT_CONFIG (46): MQBrokerError with the broker's code and remark when it
        does not take the subscription (SYSTEM_ERROR without enablePropertyFilter,
        SUBSCRIPTION_PARSE_FAILED with the parser's message for a bad expression)."""
        body = CheckClientRequestBody(
            client_id=client_id,
            group=group,
            subscription_data=SubscriptionDataBody(
                topic=subscription.topic,
                sub_string=subscription.sub_string,
                tags_set=set(subscription.tags_set),
                code_set=set(subscription.code_set),
                sub_version=subscription.sub_version,
                expression_type=subscription.expression_type,
            ),
        )
        await self._ok(
            addr, RequestCode.CHECK_CLIENT_CONFIG, body=body.to_json(), timeout_s=timeout_s
        )

    async def unregister_client(
        self,
        addr: str,
        client_id: str,
        producer_group: str | None,
        consumer_group: str | None,
        timeout_s: float,
    ) -> None:
        """UNREGISTER_CLIENT (35)."""
        header = UnregisterClientRequestHeader(
            client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
        )
        await self._ok(addr, RequestCode.UNREGISTER_CLIENT, header.to_ext_fields(), b"", timeout_s)

    async def get_consumer_id_list(self, addr: str, group: str, timeout_s: float) -> list[str]:
        """GET_CONSUMER_LIST_BY_GROUP (38): the client ids of the group's live consumers."""
        header = GetConsumerListByGroupRequestHeader(consumer_group=group)
        response = await self._call(
            addr, RequestCode.GET_CONSUMER_LIST_BY_GROUP, header.to_ext_fields(), b"", timeout_s
        )
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(response, addr)
        return GetConsumerListByGroupResponseBody.from_json(response.body).consumer_id_list

    # -- offsets ---------------------------------------------------------------------------

    async def query_consumer_offset(
        self, addr: str, group: str, mq: MessageQueue, timeout_s: float
    ) -> int:
        """QUERY_CONSUMER_OFFSET (14); OffsetNotFoundError when the group has none."""
        header = QueryConsumerOffsetRequestHeader(
            consumer_group=group, topic=mq.topic, queue_id=mq.queue_id, broker_name=mq.broker_name
        )
        response = await self._call(
            addr, RequestCode.QUERY_CONSUMER_OFFSET, header.to_ext_fields(), b"", timeout_s
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            raise OffsetNotFoundError(response.code, response.remark, addr)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(response, addr)
        return QueryConsumerOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def update_consumer_offset(
        self,
        addr: str,
        group: str,
        mq: MessageQueue,
        offset: int,
        timeout_s: float,
        *,
        oneway: bool = False,
    ) -> None:
        """UPDATE_CONSUMER_OFFSET (15), answered or oneway."""
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group=group,
            topic=mq.topic,
            queue_id=mq.queue_id,
            commit_offset=offset,
            broker_name=mq.broker_name,
        )
        if oneway:
            request = RemotingCommand.create_request(
                RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields()
            )
            await self.remoting.invoke_oneway(addr, request)
            return
        await self._ok(
            addr, RequestCode.UPDATE_CONSUMER_OFFSET, header.to_ext_fields(), b"", timeout_s
        )

    async def get_max_offset(self, addr: str, mq: MessageQueue, timeout_s: float) -> int:
        """GET_MAX_OFFSET (30): one past the queue's last message."""
        header = GetMaxOffsetRequestHeader(
            topic=mq.topic, queue_id=mq.queue_id, broker_name=mq.broker_name
        )
        response = await self._ok(
            addr, RequestCode.GET_MAX_OFFSET, header.to_ext_fields(), b"", timeout_s
        )
        return GetMaxOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def get_min_offset(self, addr: str, mq: MessageQueue, timeout_s: float) -> int:
        """GET_MIN_OFFSET (31): the queue's first offset still stored."""
        header = GetMinOffsetRequestHeader(
            topic=mq.topic, queue_id=mq.queue_id, broker_name=mq.broker_name
        )
        response = await self._ok(
            addr, RequestCode.GET_MIN_OFFSET, header.to_ext_fields(), b"", timeout_s
        )
        return GetMinOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    async def search_offset(
        self, addr: str, mq: MessageQueue, timestamp_ms: int, timeout_s: float
    ) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (29): the first offset stored at or after the time."""
        header = SearchOffsetRequestHeader(
            topic=mq.topic, queue_id=mq.queue_id, timestamp=timestamp_ms
        )
        response = await self._ok(
            addr, RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header.to_ext_fields(), b"", timeout_s
        )
        return SearchOffsetResponseHeader.from_ext_fields(response.ext_fields).offset

    # -- transactions ----------------------------------------------------------------------

    async def end_transaction(
        self,
        addr: str,
        header: EndTransactionRequestHeader,
        timeout_s: float,
        *,
        remark: str | None = None,
        oneway: bool = False,
    ) -> None:
        """END_TRANSACTION (37): commit or roll back a half message. RocketMQ's producers
        send it oneway; answered, a failure (wrong group, unknown half) raises."""
        request = RemotingCommand.create_request(
            RequestCode.END_TRANSACTION, header.to_ext_fields()
        )
        request.remark = remark
        if oneway:
            await self.remoting.invoke_oneway(addr, request)
            return
        response = await self._invoke(addr, request, timeout_s)
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(response, addr)

    async def recall_message(
        self, addr: str, header: RecallMessageRequestHeader, timeout_s: float
    ) -> str:
        """RECALL_MESSAGE (370, RocketMQ 5.3): cancel a delay message before its time; the
        recalled message's unique id. A refusal raises MQBrokerError."""
        response = await self._ok(
            addr, RequestCode.RECALL_MESSAGE, header.to_ext_fields(), b"", timeout_s
        )
        return RecallMessageResponseHeader.from_ext_fields(response.ext_fields).msg_id

    # -- retry and queue locks -------------------------------------------------------------

    async def consumer_send_message_back(
        self,
        addr: str,
        msg: MessageExt,
        group: str,
        delay_level: int,
        max_reconsume_times: int,
        timeout_s: float,
    ) -> None:
        """CONSUMER_SEND_MSG_BACK (36): a message the consumer failed, for retry (or, with
        ``delay_level`` < 0 or past ``max_reconsume_times``, for the dead letter queue)."""
        header = ConsumerSendMsgBackRequestHeader(
            offset=msg.commit_log_offset,
            group=group,
            delay_level=delay_level,
            origin_msg_id=msg.msg_id,
            origin_topic=msg.topic,
            max_reconsume_times=max_reconsume_times,
        )
        await self._ok(
            addr, RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields(), b"", timeout_s
        )

    async def lock_batch_mq(
        self, addr: str, body: LockBatchRequestBody, timeout_s: float
    ) -> set[MessageQueue]:
        """LOCK_BATCH_MQ (41): the queues the broker now holds for this client."""
        response = await self._ok(
            addr, RequestCode.LOCK_BATCH_MQ, body=body.to_json(), timeout_s=timeout_s
        )
        return LockBatchResponseBody.from_json(response.body).lock_ok_mq_set

    async def unlock_batch_mq(
        self, addr: str, body: UnlockBatchRequestBody, timeout_s: float, *, oneway: bool = False
    ) -> None:
        """UNLOCK_BATCH_MQ (42)."""
        if oneway:
            request = RemotingCommand.create_request(
                RequestCode.UNLOCK_BATCH_MQ, body=body.to_json()
            )
            await self.remoting.invoke_oneway(addr, request)
            return
        await self._ok(addr, RequestCode.UNLOCK_BATCH_MQ, body=body.to_json(), timeout_s=timeout_s)

    # -- administration --------------------------------------------------------------------

    async def create_topic(
        self, addr: str, header: CreateTopicRequestHeader, timeout_s: float
    ) -> None:
        """UPDATE_AND_CREATE_TOPIC (17)."""
        await self._ok(
            addr, RequestCode.UPDATE_AND_CREATE_TOPIC, header.to_ext_fields(), b"", timeout_s
        )

    async def delete_topic_in_broker(self, addr: str, topic: str, timeout_s: float) -> None:
        """DELETE_TOPIC_IN_BROKER (215)."""
        header = DeleteTopicRequestHeader(topic=topic)
        await self._ok(
            addr, RequestCode.DELETE_TOPIC_IN_BROKER, header.to_ext_fields(), b"", timeout_s
        )

    async def view_message(self, addr: str, commit_log_offset: int, timeout_s: float) -> MessageExt:
        """VIEW_MESSAGE_BY_ID (33): the message at a commit log offset."""
        header = ViewMessageRequestHeader(offset=commit_log_offset)
        response = await self._ok(
            addr, RequestCode.VIEW_MESSAGE_BY_ID, header.to_ext_fields(), b"", timeout_s
        )
        [message] = decode_client_messages(response.body)
        return message

    async def query_message(
        self,
        addr: str,
        topic: str,
        key: str,
        max_num: int,
        begin_ms: int,
        end_ms: int,
        timeout_s: float,
    ) -> list[MessageExt]:
        """QUERY_MESSAGE (12): messages of ``topic`` indexed under ``key`` (a key or a unique
        id) stored in the time range; empty when there are none."""
        header = QueryMessageRequestHeader(
            topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms, end_timestamp=end_ms
        )
        response = await self._call(
            addr, RequestCode.QUERY_MESSAGE, header.to_ext_fields(), b"", timeout_s
        )
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            return []
        if response.code != ResponseCode.SUCCESS:
            raise MQBrokerError.for_response(response, addr)
        return decode_client_messages(response.body)


def send_result_from(
    response: RemotingCommand,
    addr: str,
    header: SendMessageRequestHeader,
    broker_name: str,
    msg_id: str,
) -> SendResult:
    """MQClientAPIImpl.processSendResponse: a SendResult, or the error the code means."""
    status = _SEND_STATUS.get(response.code)
    if status is None:
        raise MQBrokerError.for_response(response, addr)
    answer = SendMessageResponseHeader.from_ext_fields(response.ext_fields)
    return SendResult(
        send_status=status,
        msg_id=msg_id,
        message_queue=MessageQueue(header.topic, broker_name, answer.queue_id),
        queue_offset=answer.queue_offset,
        offset_msg_id=answer.msg_id,
        region_id=response.ext_fields.get(mc.PROPERTY_MSG_REGION, mc.DEFAULT_TRACE_REGION_ID),
        trace_on=response.ext_fields.get(mc.PROPERTY_TRACE_SWITCH, "true") != "false",
        transaction_id=answer.transaction_id,
        recall_handle=answer.recall_handle,
    )


def decode_client_messages(body: bytes) -> list[MessageExt]:
    """Messages as a client hands them to its user: compressed bodies inflated."""
    messages = decode_messages(body)
    for m in messages:
        if m.sys_flag & sf.COMPRESSED_FLAG:
            try:
                m.body = zlib.decompress(m.body)
            except zlib.error as exc:
                raise MQClientError(f"message {m.msg_id}: corrupt compressed body") from exc
            m.sys_flag &= ~sf.COMPRESSED_FLAG
    return messages


def takes_every_tag(subscription: SubscriptionData) -> bool:
    """Whether ``subscription`` matches any tag (then a pull's messages need no re-check)."""
    return subscription.is_sub_all or not subscription.tags_set


def tags_match(subscription: SubscriptionData, tags: str | None) -> bool:
    """The client's re-check of the real tag string (the broker matched hash codes only)."""
    if takes_every_tag(subscription):
        return True
    return tags is not None and tags in subscription.tags_set


def pull_result_of(response: RemotingCommand, addr: str) -> PullResult:
    """A PULL_MESSAGE answer's status and offsets (its records are left to the caller);
    MQBrokerError for a code that is not a pull status."""
    status = _PULL_STATUS.get(response.code)
    if status is None:
        raise MQBrokerError.for_response(response, addr, RequestCode.PULL_MESSAGE)
    answer = PullMessageResponseHeader.from_ext_fields(response.ext_fields)
    return PullResult(
        status,
        answer.next_begin_offset,
        answer.min_offset,
        answer.max_offset,
        suggest_which_broker_id=answer.suggest_which_broker_id,
        broker_addr=addr,
    )
