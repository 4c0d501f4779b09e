"""``SendMessageProcessor``: SEND_MESSAGE (10), SEND_MESSAGE_V2 (310) and SEND_BATCH_MESSAGE
(320) into the store (RocketMQ's ``SendMessageProcessor`` with its ``msgCheck``)."""

from __future__ import annotations

import asyncio
import logging
import random
import time
from typing import Final

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.broker_stats_manager import BrokerStatsManager
from orbitmq.broker.metrics import MessageCounters
from orbitmq.broker.recall_message_processor import recall_handle_of
from orbitmq.broker.send_queue import SendQueue
from orbitmq.broker.store_stats_service import StoreStatsService
from orbitmq.broker.subscription_group_manager import SubscriptionGroupManager
from orbitmq.broker.topic_config_manager import InvalidTopicError, TopicConfigManager
from orbitmq.broker.transactional_message_service import TransactionalMessageService
from orbitmq.common import (
    MessageExtBatch,
    MessageExtBrokerInner,
    message_properties_to_string,
    string_to_message_properties,
)
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.errors import MessageFormatError
from orbitmq.common.topic import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    send_forbidden_remark,
    validate_topic,
)
from orbitmq.common.topic_attributes import TOPIC_MESSAGE_TYPE_ATTRIBUTE
from orbitmq.common.topic_message_type import send_type_problem
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import TopicConfig, TopicFilterType
from orbitmq.protocol.faq_url import FAQ_SUGGESTION
from orbitmq.protocol.header import (
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from orbitmq.protocol.perm_name import PERM_READ, PERM_WRITE, is_writeable
from orbitmq.protocol.processor_codes import SEND_MESSAGE_CODES
from orbitmq.protocol.topic_sys_flag import build_topic_sys_flag
from orbitmq.remoting import ChannelContext
from orbitmq.store import MessageStore, MessageStoreConfig, PutMessageResult, PutMessageStatus

log = logging.getLogger(__name__)

MESSAGE_TYPE_KEY: Final = TOPIC_MESSAGE_TYPE_ATTRIBUTE.name

#: RocketMQ's ``MixAll.DLQ_NUMS_PER_GROUP``.
DLQ_NUMS_PER_GROUP: Final = 1


def disk_util(store: MessageStore) -> str:
    """The used share of the disks under the commit log, consume queues and index, as
    RocketMQ's SendMessageProcessor.diskUtil writes it ("CL:  0.45 CQ:  0.45 INDEX:  0.45";
    -1 for a disk that cannot be measured)."""
    config = store.config
    ratios = []
    for path in (config.commit_log_dir, config.consume_queue_dir, config.index_dir):
        try:
            ratios.append(store.fs.disk_usage_ratio(path))
        except OSError:
            ratios.append(-1.0)
    return "CL: {:5.2f} CQ: {:5.2f} INDEX: {:5.2f}".format(*ratios)


def _put_status_answers(max_message_size: int) -> dict[PutMessageStatus, tuple[int, str | None]]:
    """PutMessageStatus -> (response code, remark), as ``handlePutMessageResult`` answers.
    None keeps the store's own remark (stored statuses carry none)."""
    return {
        PutMessageStatus.PUT_OK: (ResponseCode.SUCCESS, None),
        PutMessageStatus.FLUSH_DISK_TIMEOUT: (ResponseCode.FLUSH_DISK_TIMEOUT, None),
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT: (ResponseCode.FLUSH_SLAVE_TIMEOUT, None),
        PutMessageStatus.SLAVE_NOT_AVAILABLE: (ResponseCode.SLAVE_NOT_AVAILABLE, None),
        PutMessageStatus.CREATE_MAPPED_FILE_FAILED: (
            ResponseCode.SYSTEM_ERROR,
            "create mapped file failed, server is busy or broken.",
        ),
        PutMessageStatus.MESSAGE_ILLEGAL: (
            ResponseCode.MESSAGE_ILLEGAL,
            "the message is illegal, maybe msg body or properties length not matched. msg body "
            f"length limit {max_message_size}B, msg properties length limit 32KB.",
        ),
        PutMessageStatus.PROPERTIES_SIZE_EXCEEDED: (
            ResponseCode.MESSAGE_ILLEGAL,
            "the message is illegal, maybe msg body or properties length not matched. msg body "
            f"length limit {max_message_size}B, msg properties length limit 32KB.",
        ),
        # The remark's "{disk}" is filled in per answer (``disk_util``): a slave, a full
        # disk and a stopped store all answer this, as RocketMQ 4.9.8 does.
        PutMessageStatus.SERVICE_NOT_AVAILABLE: (
            ResponseCode.SERVICE_NOT_AVAILABLE,
            "service not available now. It may be caused by one of the following reasons: "
            "the broker's disk is full [{disk}], messages are put to the slave, message store "
            "has been shut down, etc.",
        ),
        # SYSTEM_BUSY as RocketMQ 5 answers (4.9 answered SYSTEM_ERROR): a busy answer.
        PutMessageStatus.OS_PAGE_CACHE_BUSY: (
            ResponseCode.SYSTEM_BUSY,
            "[PC_SYNCHRONIZED]broker busy, start flow control for a while",
        ),
        PutMessageStatus.UNKNOWN_ERROR: (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR"),
        # RocketMQ 5 answers both with codes of old; the store's remark names the property,
        # its value and the limit.
        PutMessageStatus.WHEEL_TIMER_MSG_ILLEGAL: (ResponseCode.MESSAGE_ILLEGAL, None),
        PutMessageStatus.WHEEL_TIMER_NOT_ENABLE: (ResponseCode.SYSTEM_ERROR, None),
    }


class SendMessageProcessor:
    """Answers the three send codes: checks the topic (creating it from TBW102 when
    allowed), picks a queue, builds the stored message and awaits the store.

    Owns the send queue (appends off the loop while the disk is slow, answered busy when
    they wait too long); safe from several tasks of the broker's event loop.
    """

    REQUEST_CODES: Final = SEND_MESSAGE_CODES

    def __init__(
        self,
        broker_config: BrokerConfig,
        store_config: MessageStoreConfig,
        store: MessageStore,
        topic_config_manager: TopicConfigManager,
        subscription_group_manager: SubscriptionGroupManager,
        transactions: TransactionalMessageService,
        *,
        stats: tuple[BrokerStatsManager, StoreStatsService] | None = None,
    ) -> None:
        """``stats`` are counted into when given: each stored send's topic, messages and
        bytes, each put's time and outcome."""
        self.broker_config = broker_config
        self.stats = stats
        self.store = store
        self.transactions = transactions
        self.topic_config_manager = topic_config_manager
        self.subscription_group_manager = subscription_group_manager
        self._answers = _put_status_answers(store_config.max_message_size)
        self._random = random.Random()
        self.send_queue = SendQueue(store, broker_config)
        #: Counts stored messages when the broker exports metrics (set by its wiring).
        self.message_counters: MessageCounters | None = None

    def reject_request(self) -> bool:
        """SYSTEM_BUSY "[REJECTREQUEST]" before a send is queued while an append has held
        the put lock longer than osPageCacheBusyTimeOutMills (RocketMQ's rejectRequest)."""
        return self.store.commit_log.is_os_page_cache_busy()

    async def process_request(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand | None:
        header = parse_send_header(request)
        response = RemotingCommand.create_response(request, -1)
        # RocketMQ's BrokerConfig regionId and traceOn defaults, sent on every answer.
        response.ext_fields[mc.PROPERTY_MSG_REGION] = mc.DEFAULT_TRACE_REGION_ID
        response.ext_fields[mc.PROPERTY_TRACE_SWITCH] = "true"
        topic_config = await self._msg_check(ctx, header, response)
        if topic_config is None:
            return response
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = self._random.randrange(99_999_999) % topic_config.write_queue_nums
        msg = self._build_message(ctx, request, header, queue_id)
        attributes = topic_config.attributes
        if (
            attributes
            and MESSAGE_TYPE_KEY in attributes
            and self.broker_config.enable_topic_message_type_check
        ):
            # Only topics that declare a message.type are checked here (BrokerConfig).
            problem = send_type_problem(
                header.topic, topic_config.topic_message_type, msg.properties
            )
            if problem is not None:
                response.set_code_and_remark(ResponseCode.MESSAGE_ILLEGAL, problem)
                return response
        if not header.batch:
            target = await self._handle_retry_and_dlq(header, response, msg, topic_config)
            if target is None:
                return response
            topic_config = target
        if topic_config.topic_filter_type is TopicFilterType.MULTI_TAG:
            msg.sys_flag |= sf.MULTI_TAGS_FLAG
        # Counted under the topic sent to, not a transaction's half topic.
        topic, properties = msg.topic, msg.properties
        if _is_prepared(msg):
            half = self._stage(msg, response)
            if half is None:
                return response
            msg = half
        began = time.monotonic_ns()
        result = await self.send_queue.put(msg)
        if isinstance(result, str):  # cleared from the send queue, not stored
            response.set_code_and_remark(ResponseCode.SYSTEM_BUSY, result)
            return response
        counters, append = self.message_counters, result.append_result
        if counters is not None and append is not None and result.is_ok:
            counters.record_in(topic, properties, append.msg_num, append.wrote_bytes)
        if self.stats is not None:
            _count_put(self.stats, topic, result, began)
        return self._answer(response, result, queue_id, None if header.batch else msg)

    def _stage(
        self, msg: MessageExtBrokerInner, response: RemotingCommand
    ) -> MessageExtBrokerInner | None:
        """The half message a transactional send (one message, or a batch staged whole)
        stores; None, with ``response`` filled, when it may not be stored."""
        if self.broker_config.reject_transaction_message:
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker_config.broker_ip1}] sending transaction message "
                "is forbidden",
            )
            return None
        if not isinstance(msg, MessageExtBatch):
            if mc.PROPERTY_HALF_BATCH in msg.properties:
                response.set_code_and_remark(
                    ResponseCode.MESSAGE_ILLEGAL,
                    f"the property {mc.PROPERTY_HALF_BATCH} is the broker's to set",
                )
                return None
            return self.transactions.to_half(msg)
        try:
            return self.transactions.batch_to_half(msg)
        except MessageFormatError as exc:
            response.set_code_and_remark(
                ResponseCode.MESSAGE_ILLEGAL, f"the staged batch is refused: {exc}"
            )
            return None

    async def _msg_check(
        self, ctx: ChannelContext, header: SendMessageRequestHeader, response: RemotingCommand
    ) -> TopicConfig | None:
        """``msgCheck``: the topic exists (or was just created) and the queue id fits; on
        failure ``response`` holds the code and remark and None is returned."""
        topic = header.topic
        manager = self.topic_config_manager
        if not is_writeable(self.broker_config.broker_permission) and manager.is_order_topic(topic):
            response.set_code_and_remark(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.broker_config.broker_ip1}] sending message is forbidden",
            )
            return None
        problem = validate_topic(topic)
        if problem is not None:
            response.set_code_and_remark(ResponseCode.SYSTEM_ERROR, problem.remark)
            return None
        forbidden = send_forbidden_remark(topic)
        if forbidden is not None:
            # Only the broker writes these (schedule, transactions); its own writes go to
            # the store directly, never through this processor.
            response.set_code_and_remark(ResponseCode.NO_PERMISSION, forbidden)
            return None
        topic_config = manager.select_topic_config(topic)
        if topic_config is None:
            topic_config = await self._create_topic(ctx, header)
            if topic_config is None:
                response.set_code_and_remark(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please!{FAQ_SUGGESTION}",
                )
                return None
        valid = max(topic_config.write_queue_nums, topic_config.read_queue_nums)
        if header.queue_id >= valid:
            response.set_code_and_remark(
                ResponseCode.SYSTEM_ERROR,
                f"request queueId[{header.queue_id}] is illegal, {topic_config} "
                f"Producer: {ctx.remote_address}",
            )
            return None
        return topic_config

    async def _create_topic(
        self, ctx: ChannelContext, header: SendMessageRequestHeader
    ) -> TopicConfig | None:
        topic = header.topic
        sys_flag = 0
        if header.unit_mode:
            retry = topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            sys_flag = build_topic_sys_flag(not retry, retry)
        log.warning("the topic %s not exist, producer: %s", topic, ctx.remote_address)
        manager = self.topic_config_manager
        try:
            # Creating a topic saves topics.json (an fsync): keep it off the loop.
            created = await asyncio.to_thread(
                manager.create_topic_in_send_message_method,
                topic,
                header.default_topic,
                ctx.remote_address,
                header.default_topic_queue_nums,
                sys_flag,
            )
            if created is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                created = await asyncio.to_thread(
                    manager.create_topic_in_send_message_back_method,
                    topic,
                    1,
                    PERM_READ | PERM_WRITE,
                    sys_flag,
                )
        except InvalidTopicError:
            return None
        return created

    def _build_message(
        self,
        ctx: ChannelContext,
        request: RemotingCommand,
        header: SendMessageRequestHeader,
        queue_id: int,
    ) -> MessageExtBrokerInner:
        properties = string_to_message_properties(header.properties or "")
        properties[mc.PROPERTY_CLUSTER] = self.broker_config.broker_cluster_name
        msg: MessageExtBrokerInner
        # RocketMQ decides by the header's batch flag (``m`` in V2), not by the request code:
        # SEND_BATCH_MESSAGE without it is stored as one message whose body is the batch.
        if header.batch:
            msg = MessageExtBatch(header.topic)
            props_string = message_properties_to_string(properties)
        else:
            msg = MessageExtBrokerInner(header.topic)
            # WAIT=true need not be stored: nine bytes saved per message, as RocketMQ does.
            stored = {k: v for k, v in properties.items() if k != mc.PROPERTY_WAIT_STORE_MSG_OK}
            props_string = message_properties_to_string(stored)
        msg.queue_id = queue_id
        msg.body = request.body
        msg.flag = header.flag
        msg.properties = properties
        msg.properties_string = props_string
        msg.sys_flag = header.sys_flag
        msg.born_timestamp = header.born_timestamp
        msg.born_host = ctx.remote_socket_address
        msg.reconsume_times = header.reconsume_times or 0
        return msg

    async def _handle_retry_and_dlq(
        self,
        header: SendMessageRequestHeader,
        response: RemotingCommand,
        msg: MessageExtBrokerInner,
        topic_config: TopicConfig,
    ) -> TopicConfig | None:
        """``handleRetryAndDLQ``: a %RETRY% message past its group's max reconsume times
        goes to %DLQ%group. None (with ``response`` filled) when it cannot be stored."""
        topic = header.topic
        if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return topic_config
        group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
        group_config = await asyncio.to_thread(
            self.subscription_group_manager.find_subscription_group_config, group
        )
        if group_config is None:
            response.set_code_and_remark(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group} {FAQ_SUGGESTION}",
            )
            return None
        max_times = group_config.retry_max_times
        if header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if (header.reconsume_times or 0) < max_times:
            return topic_config
        dlq_topic = DLQ_GROUP_TOPIC_PREFIX + group
        dlq_config = await asyncio.to_thread(
            self.topic_config_manager.create_topic_in_send_message_back_method,
            dlq_topic,
            DLQ_NUMS_PER_GROUP,
            PERM_READ | PERM_WRITE,
            0,
        )
        msg.topic = dlq_topic
        msg.queue_id = self._random.randrange(99_999_999) % DLQ_NUMS_PER_GROUP
        msg.delay_time_level = 0
        msg.properties_string = message_properties_to_string(
            {k: v for k, v in msg.properties.items() if k != mc.PROPERTY_WAIT_STORE_MSG_OK}
        )
        return dlq_config

    def _answer(
        self,
        response: RemotingCommand,
        result: PutMessageResult,
        queue_id: int,
        msg: MessageExtBrokerInner | None,
    ) -> RemotingCommand:
        """The answer to a put; a timer message (``msg``, not a batch) gets its recall
        handle (RocketMQ 5.3's ``attachRecallHandle``)."""
        code, remark = self._answers.get(
            result.status, (ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT")
        )
        response.code = code
        append = result.append_result
        if result.is_ok and append is not None:
            response.remark = None
            header = SendMessageResponseHeader(
                msg_id=append.msg_id,
                queue_id=queue_id,
                queue_offset=append.logics_offset,
                recall_handle=(
                    None if msg is None else recall_handle_of(msg, self.broker_config.broker_name)
                ),
            )
            response.ext_fields.update(header.to_ext_fields())
            return response
        if remark is None:
            remark = result.remark or result.status.name
        elif result.status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            remark = remark.format(disk=disk_util(self.store))
        elif result.remark:
            remark = f"{remark} ({result.remark})"
        response.remark = remark
        return response


def parse_send_header(request: RemotingCommand) -> SendMessageRequestHeader:
    """The V1 header of any of the three send codes (310 and 320 use the short keys)."""
    if request.code == RequestCode.SEND_MESSAGE:
        return SendMessageRequestHeader.from_ext_fields(request.ext_fields)
    return SendMessageRequestHeaderV2.from_ext_fields(request.ext_fields).to_v1()


def _count_put(
    stats: tuple[BrokerStatsManager, StoreStatsService],
    topic: str,
    result: PutMessageResult,
    began_ns: int,
) -> None:
    """The stats of one put (RocketMQ's handlePutMessageResult and its put timing). A put
    with an append result was stored (a flush or replica timeout stores it too)."""
    append = result.append_result
    stats[1].on_put((time.monotonic_ns() - began_ns) // 1_000_000, append is not None)
    if append is not None:
        stats[0].on_put(topic, append.msg_num, append.wrote_bytes)


def _is_prepared(msg: MessageExtBrokerInner) -> bool:
    return msg.properties.get(mc.PROPERTY_TRANSACTION_PREPARED, "").lower() == "true"
