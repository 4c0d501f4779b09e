"""``ConsumerActivity``: ReceiveMessage, AckMessage, ChangeInvisibleDuration and
ForwardMessageToDeadLetterQueue over the broker's POP processors in process (RocketMQ 5's
proxy ``ReceiveMessageActivity``, ``AckMessageActivity``, ``ChangeInvisibleDurationActivity``
and ``ForwardMessageToDLQActivity`` with its local-mode message service).

ReceiveMessage streams its answer as the proxy does: a status, then each message (its
receipt handle is the POP_CK extra info and the message's commit log offset), then the
delivery timestamp. A POP that finds nothing is held by the broker's long polling; its
later answer comes through the request's channel (``AnswerChannel``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

from orbitmq.broker import BrokerController
from orbitmq.common import MessageExt, decode_messages
from orbitmq.common import message_const as mc
from orbitmq.common.message import SocketAddress
from orbitmq.filter import Sql92ParseError, SubscriptionParseError, parse_sql92
from orbitmq.filter.tag_filter import build_subscription
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header.consumer import ConsumerSendMsgBackRequestHeader
from orbitmq.protocol.header.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from orbitmq.protocol.pop_extra_info import (
    ExtraInfo,
    ReceiptHandle,
    parse_msg_offset_info,
    parse_order_count_info,
    parse_start_offset_info,
    queue_key,
    queue_offset_key,
)
from orbitmq.proxy.grpc_status import (
    OK_STATUS,
    GrpcProxyError,
    status,
    status_of,
    status_of_response,
    validate_consumer_group,
    validate_topic_name,
)
from orbitmq.proxy.message_builder import build_message, timestamp
from orbitmq.proxy.proxy_context import LocalChannel, ProxyContext, peer_address
from orbitmq.proxy.receipt_handle import decode_receipt_handle
from orbitmq.proxy.receipt_handle_manager import ReceiptHandleManager
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb

log = logging.getLogger(__name__)

#: ProxyConfig's defaults: the invisible time of an auto-renewed receive, the shortest one a
#: client may ask for, the longest; the long polling time's bounds.
DEFAULT_INVISIBLE_TIME_MS: Final = 60_000
MIN_INVISIBLE_TIME_MS: Final = 10_000
MAX_INVISIBLE_TIME_MS: Final = 12 * 3600 * 1000
MIN_LONG_POLLING_MS: Final = 5_000
MAX_LONG_POLLING_MS: Final = 20_000
_CONSUME_INIT_MODE_MAX: Final = 1
#: ``ProxyUtils.MAX_MSG_NUMS_FOR_POP_REQUEST``: a larger batch is cut to it.
MAX_POP_BATCH: Final = 32
#: ``NACK_INVISIBLE_TIME``: how soon a message popped for a gone client comes back.
NACK_INVISIBLE_MS: Final = 1_000


def _ms(duration: Any) -> int:
    return int(duration.seconds) * 1000 + int(duration.nanos) // 1_000_000


def validate_invisible_time(ms: int, minimum: int) -> None:
    """``GrpcValidator.validateInvisibleTime``: ILLEGAL_INVISIBLE_TIME out of bounds."""
    if ms < minimum:
        raise GrpcProxyError(
            d.ILLEGAL_INVISIBLE_TIME, f"the invisibleTime is too small. min is {minimum}"
        )
    if ms > MAX_INVISIBLE_TIME_MS:
        raise GrpcProxyError(
            d.ILLEGAL_INVISIBLE_TIME,
            f"the invisibleTime is too large. max is {MAX_INVISIBLE_TIME_MS}",
        )


def validate_filter(topic: str, expression: str, kind: str) -> None:
    """``FilterAPI.build``'s check: ILLEGAL_FILTER_EXPRESSION for one that does not parse."""
    try:
        if kind == "SQL92":
            parse_sql92(expression)
        build_subscription(topic, expression, kind)
    except (SubscriptionParseError, Sql92ParseError) as exc:
        raise GrpcProxyError(d.ILLEGAL_FILTER_EXPRESSION, str(exc)) from exc


class AnswerChannel(LocalChannel):
    """The channel of one in-process POP: a request the broker held is answered later by a
    ``write`` (long polling's wake-up), which completes ``answer``. Inactive once the gRPC
    call is gone, so a wake-up after it pops nothing. Use from the broker's event loop."""

    def __init__(
        self, remote: tuple[str, int], orphaned: Callable[[RemotingCommand], None]
    ) -> None:
        """``orphaned`` takes an answer that came when nobody waited for it any more."""
        super().__init__(remote)
        self.answer: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()
        self.active = True
        self._orphaned = orphaned

    @property
    def is_active(self) -> bool:
        return self.active

    def write(self, command: RemotingCommand) -> bool:
        if self.answer.done() or not self.active:
            self._orphaned(command)
            return False
        self.answer.set_result(command)
        return True


def _with_handles(
    messages: list[MessageExt], header: PopMessageResponseHeader, broker_name: str, topic: str
) -> None:
    """Give each popped message its receipt handle (``createHandle`` over the POP_CK the
    local message service builds from the answer's offset infos), and the topic it was
    received for (a retried one was read from the group's retry topic)."""
    start = parse_start_offset_info(header.start_offset_info)
    offsets = parse_msg_offset_info(header.msg_offset_info)
    counts = parse_order_count_info(header.order_count_info)
    for message in messages:
        key = queue_key(message.topic, message.queue_id)
        given = message.properties.get(mc.PROPERTY_POP_CK)
        if given is not None:  # the broker's own (a retried message carries it)
            message.properties[mc.PROPERTY_POP_CK] = f"{given} {message.commit_log_offset}"
            message.topic = topic
            continue
        if key not in start or key not in offsets:
            continue
        extra = ExtraInfo.build(
            ck_queue_offset=start[key],
            pop_time=header.pop_time,
            invisible_time=header.invisible_time,
            revive_qid=header.revive_qid,
            topic=message.topic,
            broker_name=broker_name,
            queue_id=message.queue_id,
            queue_offset=message.queue_offset,
        )
        message.properties[mc.PROPERTY_POP_CK] = f"{extra} {message.commit_log_offset}"
        by_offset = queue_offset_key(message.topic, message.queue_id, message.queue_offset)
        count = counts.get(by_offset) or counts.get(key)
        if count:  # FIFO POP: how often this one was handed out
            message.reconsume_times = count
        message.properties.setdefault(mc.PROPERTY_FIRST_POP_TIME, str(header.pop_time))
        message.topic = topic


class ConsumerActivity:
    """Serves the POP RPCs for one broker. Holds no state of its own; use from the broker's
    event loop."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        #: The handles of auto-renewed receives (PushConsumer), renewed in the background.
        self.renewals = ReceiptHandleManager(self._renew, self._now_ms)
        self._nacks: set[asyncio.Task[None]] = set()

    @property
    def _pop(self) -> Any:
        return self.broker.pop

    def _current(self, context: Any, group: str, message_id: str, text: str) -> ReceiptHandle:
        """The handle to act on: the renewed one of an auto-renewed message (its client
        still holds the first), else ``text`` (checked not to have expired)."""
        client_id = ProxyContext.of(context).client_id
        renewed = self.renewals.remove(client_id, group, message_id) if message_id else None
        return renewed if renewed is not None else self._handle(text)

    def _now_ms(self) -> int:
        """The POP processors' clock: receipt handles carry its times."""
        return int(self._pop.pop_message_processor.clock.now_ms())

    def _fifo(self, group: str) -> bool:
        config = self.broker.subscription_group_manager.find_subscription_group_config(group)
        return bool(getattr(config, "consume_message_orderly", False))

    async def receive_message(
        self, request: pb.ReceiveMessageRequest, context: Any
    ) -> AsyncIterator[pb.ReceiveMessageResponse]:
        """The stream: a status, the messages found, then the delivery timestamp."""
        # Read from the call now: once the client is gone the call's context is no longer
        # safe to touch (grpc frees it), and the stream may be closed at any yield.
        client_id = ProxyContext.of(context).client_id
        try:
            messages = await self._receive(request, context, client_id)
        except Exception as exc:  # answered in the stream, as the proxy's writer does
            yield pb.ReceiveMessageResponse(status=status_of(exc))
        else:
            if isinstance(messages, d.Status):
                yield pb.ReceiveMessageResponse(status=messages)
            else:
                sent = 0
                try:
                    yield pb.ReceiveMessageResponse(status=OK_STATUS)
                    for message in messages:
                        yield pb.ReceiveMessageResponse(message=build_message(message))
                        sent += 1
                except (GeneratorExit, asyncio.CancelledError):
                    # The client is gone: what it did not get comes back to the group soon
                    # (processThrowableWhenWriteMessage).
                    self._nack_soon(request, messages[sent:], client_id)
                    raise
        now_ms = int(time.time() * 1000)
        yield pb.ReceiveMessageResponse(delivery_timestamp=timestamp(now_ms))

    def _polling_ms(self, request: pb.ReceiveMessageRequest, context: Any) -> int:
        remaining = context.time_remaining()
        remaining_ms = None if remaining is None else int(remaining * 1000)
        if request.HasField("long_polling_timeout"):
            polling = _ms(request.long_polling_timeout)
        else:
            polling = MAX_LONG_POLLING_MS
        polling = min(max(polling, MIN_LONG_POLLING_MS), MAX_LONG_POLLING_MS)
        if remaining_ms is not None and polling > remaining_ms:
            if remaining_ms < MIN_LONG_POLLING_MS:
                raise GrpcProxyError(
                    d.ILLEGAL_POLLING_TIME,
                    "The deadline time remaining is not enough for polling, please check "
                    "network condition",
                )
            polling = remaining_ms
        return polling

    async def _receive(
        self, request: pb.ReceiveMessageRequest, context: Any, client_id: str
    ) -> list[MessageExt] | d.Status:
        polling_ms = self._polling_ms(request, context)
        topic, group = request.message_queue.topic.name, request.group.name
        validate_topic_name(topic)
        validate_consumer_group(group)
        if request.auto_renew:
            invisible_ms = DEFAULT_INVISIBLE_TIME_MS
        else:
            invisible_ms = _ms(request.invisible_duration)
            validate_invisible_time(invisible_ms, MIN_INVISIBLE_TIME_MS)
        expression = request.filter_expression
        kind = "SQL92" if expression.type == d.SQL else "TAG"
        validate_filter(topic, expression.expression or "*", kind)
        header = PopMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            # The proxy pops from every queue of the broker (its read selector's queue by
            # broker name has id -1), whatever queue the client picked from the route.
            queue_id=-1,
            max_msg_nums=min(request.batch_size or MAX_POP_BATCH, MAX_POP_BATCH),
            invisible_time=invisible_ms,
            # The broker answers a little before the client's deadline (longPollingReserve).
            poll_time=max(0, polling_ms - 100),
            born_time=self._now_ms(),
            init_mode=_CONSUME_INIT_MODE_MAX,
            exp_type=kind,
            exp=expression.expression or "*",
            order=self._fifo(group),
            attempt_id=request.attempt_id if request.HasField("attempt_id") else None,
            broker_name=None,
        )
        command = RemotingCommand.create_request(RequestCode.POP_MESSAGE, header.to_ext_fields())

        def orphaned(answer: RemotingCommand) -> None:
            popped = self._popped(answer, topic)
            if not isinstance(popped, d.Status):
                self._nack_soon(request, popped, "")  # never handed out, never renewed

        channel = AnswerChannel(peer_address(context.peer()), orphaned)
        try:
            response = await self._pop.pop_message_processor.process_request(channel, command)
            if response is None:
                response = await asyncio.wait_for(channel.answer, polling_ms / 1000 + 5)
        except TimeoutError:
            return status(d.MESSAGE_NOT_FOUND, "no new message")
        finally:
            channel.active = False
        popped = self._popped(response, topic)
        if not isinstance(popped, d.Status):
            popped = await self._past_max_attempts(
                group, topic, popped, channel.remote_socket_address
            )
        if request.auto_renew and not isinstance(popped, d.Status):
            for message in popped:
                text = message.properties.get(mc.PROPERTY_POP_CK)
                message_id = message.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
                if text and message_id:
                    handle = decode_receipt_handle(text)
                    self.renewals.add(client_id, group, topic, message_id, handle)
        return popped

    async def _past_max_attempts(
        self, group: str, topic: str, popped: list[MessageExt], remote: SocketAddress
    ) -> list[MessageExt] | d.Status:
        """The proxy's ``PopMessageResultFilterImpl``: a message already delivered the
        group's max attempts (retryMaxTimes + 1, the consumer settings' backoff policy) goes
        to %DLQ%group instead of to the client. It matters for FIFO groups: an orderly
        message is never moved to a retry topic by the broker, only handed out again, its
        attempts counted by the broker's ConsumerOrderInfoManager."""
        config = self.broker.subscription_group_manager.find_subscription_group_config(group)
        if config is None:
            return popped
        max_attempts = config.retry_max_times + 1
        kept = []
        for message in popped:
            text = message.properties.get(mc.PROPERTY_POP_CK)
            if message.reconsume_times < max_attempts or not text:
                kept.append(message)
                continue
            message_id = message.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "")
            handle = decode_receipt_handle(text)
            answer = await self._to_dlq(group, topic, handle, message_id, 0, remote)
            if answer.code != d.OK:  # not moved: the client gets it, as the proxy does
                log.warning(
                    "could not move %s of group %s to its DLQ: %s",
                    message_id,
                    group,
                    answer.message,
                )
                kept.append(message)
        return kept or status(d.MESSAGE_NOT_FOUND, "no match message")

    def _popped(self, response: RemotingCommand, topic: str) -> list[MessageExt] | d.Status:
        """``LocalMessageService.popMessage`` and the stream writer's codes."""
        if response.code == ResponseCode.POLLING_FULL:
            return status(d.TOO_MANY_REQUESTS, "polling full")
        if response.code in (ResponseCode.POLLING_TIMEOUT, ResponseCode.PULL_NOT_FOUND):
            return status(d.MESSAGE_NOT_FOUND, "no new message")
        if response.code != ResponseCode.SUCCESS:
            return status_of_response(response.code, response.remark)
        messages = decode_messages(response.body)
        if not messages:
            return status(d.MESSAGE_NOT_FOUND, "no match message")
        header = PopMessageResponseHeader.from_ext_fields(response.ext_fields)
        _with_handles(messages, header, self.broker.broker_config.broker_name, topic)
        return messages

    # -- acknowledging -------------------------------------------------------------------

    def _handle(self, text: str) -> ReceiptHandle:
        handle = decode_receipt_handle(text)
        if handle.is_expired(self._now_ms()):
            raise GrpcProxyError(d.INVALID_RECEIPT_HANDLE, "receipt handle is expired")
        return handle

    async def _ack(
        self, group: str, topic: str, handle: ReceiptHandle, remote: SocketAddress
    ) -> d.Status:
        extra = handle.extra
        header = AckMessageRequestHeader(
            consumer_group=group,
            topic=extra.real_topic(topic, group),
            queue_id=extra.queue_id,
            extra_info=str(extra),
            offset=handle.queue_offset,
            broker_name=None,
        )
        command = RemotingCommand.create_request(RequestCode.ACK_MESSAGE, header.to_ext_fields())
        response = await self._pop.ack_message_processor.process_request(
            LocalChannel(remote), command
        )
        if response.code == ResponseCode.SUCCESS:
            return OK_STATUS
        if response.code == ResponseCode.INVALID_PARAMETER:
            # The broker's reason (another broker's handle, a revive queue it does not
            # have): the handle is not one this endpoint can ack.
            return status(d.INVALID_RECEIPT_HANDLE, response.remark or "receipt handle is invalid")
        return status(d.INTERNAL_SERVER_ERROR, "ack failed: status is abnormal")

    async def ack_message(self, request: pb.AckMessageRequest, context: Any) -> Any:
        group, topic = request.group.name, request.topic.name
        validate_topic_name(topic)
        validate_consumer_group(group)
        entries = []
        for entry in request.entries:
            try:
                handle = self._current(context, group, entry.message_id, entry.receipt_handle)
                result = await self._ack(group, topic, handle, peer_address(context.peer()))
            except Exception as exc:
                result = status_of(exc)
            entries.append(
                pb.AckMessageResultEntry(
                    message_id=entry.message_id, receipt_handle=entry.receipt_handle, status=result
                )
            )
        codes = {entry.status.code for entry in entries}
        if len(codes) == 1:
            [code] = codes
            overall = entries[0].status if code != d.OK else OK_STATUS
        elif not codes:
            overall = OK_STATUS
        else:
            overall = status(d.MULTIPLE_RESULTS, "MULTIPLE_RESULTS")
        return pb.AckMessageResponse(status=overall, entries=entries)

    async def _change(
        self, group: str, topic: str, handle: ReceiptHandle, invisible_ms: int, remote: Any
    ) -> ReceiptHandle | RemotingCommand:
        """CHANGE_MESSAGE_INVISIBLETIME: the message's new handle, or the broker's refusal."""
        extra = handle.extra
        header = ChangeInvisibleTimeRequestHeader(
            consumer_group=group,
            topic=extra.real_topic(topic, group),
            queue_id=extra.queue_id,
            extra_info=str(extra),
            offset=handle.queue_offset,
            invisible_time=invisible_ms,
            broker_name=None,
        )
        command = RemotingCommand.create_request(
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header.to_ext_fields()
        )
        processor = self._pop.change_invisible_time_processor
        response: RemotingCommand = await processor.process_request(LocalChannel(remote), command)
        if response.code != ResponseCode.SUCCESS:
            return response
        answer = ChangeInvisibleTimeResponseHeader.from_ext_fields(response.ext_fields)
        changed = extra.changed(
            handle.queue_offset, answer.pop_time, answer.invisible_time, answer.revive_qid
        )
        return ReceiptHandle(changed, handle.commit_log_offset)

    def _nack_soon(
        self, request: pb.ReceiveMessageRequest, messages: list[MessageExt], client_id: str
    ) -> None:
        """Make popped messages a gone client never got visible again in 1 s (and stop
        renewing them)."""
        group, topic = request.group.name, request.message_queue.topic.name

        async def nack() -> None:
            for message in messages:
                text = message.properties.get(mc.PROPERTY_POP_CK)
                if not text:
                    continue
                message_id = message.properties.get(mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX, "")
                self.renewals.remove(client_id, group, message_id)
                try:
                    handle = decode_receipt_handle(text)
                    await self._change(group, topic, handle, NACK_INVISIBLE_MS, ("0.0.0.0", 0))
                except Exception:
                    log.exception("could not return %s to group %s", message_id, group)

        task = asyncio.get_running_loop().create_task(nack())
        self._nacks.add(task)
        task.add_done_callback(self._nacks.discard)

    async def _renew(
        self, group: str, topic: str, handle: ReceiptHandle, invisible_ms: int
    ) -> ReceiptHandle | None:
        renewed = await self._change(group, topic, handle, invisible_ms, ("0.0.0.0", 0))
        return renewed if isinstance(renewed, ReceiptHandle) else None

    async def change_invisible_duration(
        self, request: pb.ChangeInvisibleDurationRequest, context: Any
    ) -> Any:
        group, topic = request.group.name, request.topic.name
        validate_topic_name(topic)
        validate_consumer_group(group)
        invisible_ms = _ms(request.invisible_duration)
        validate_invisible_time(invisible_ms, 0)
        handle = self._current(context, group, request.message_id, request.receipt_handle)
        remote = peer_address(context.peer())
        changed = await self._change(group, topic, handle, invisible_ms, remote)
        if not isinstance(changed, ReceiptHandle):
            return pb.ChangeInvisibleDurationResponse(
                status=status_of_response(changed.code, changed.remark)
            )
        return pb.ChangeInvisibleDurationResponse(status=OK_STATUS, receipt_handle=changed.encode())

    async def forward_message_to_dead_letter_queue(
        self, request: pb.ForwardMessageToDeadLetterQueueRequest, context: Any
    ) -> Any:
        group, topic = request.group.name, request.topic.name
        validate_topic_name(topic)
        validate_consumer_group(group)
        handle = self._current(context, group, request.message_id, request.receipt_handle)
        remote = peer_address(context.peer())
        answer = await self._to_dlq(
            group, topic, handle, request.message_id, request.max_delivery_attempts, remote
        )
        return pb.ForwardMessageToDeadLetterQueueResponse(status=answer)

    async def _to_dlq(
        self,
        group: str,
        topic: str,
        handle: ReceiptHandle,
        message_id: str,
        max_reconsume_times: int,
        remote: SocketAddress,
    ) -> d.Status:
        """CONSUMER_SEND_MSG_BACK with delay level -1 (straight to %DLQ%group), then an ack
        of the popped original, so it never comes back (``ProducerProcessor``'s
        ``forwardMessageToDeadLetterQueue``)."""
        header = ConsumerSendMsgBackRequestHeader(
            offset=handle.commit_log_offset,
            group=group,
            delay_level=-1,
            origin_msg_id=message_id,
            origin_topic=handle.extra.real_topic(topic, group),
            unit_mode=False,
            max_reconsume_times=max_reconsume_times,
            broker_name=None,
        )
        command = RemotingCommand.create_request(
            RequestCode.CONSUMER_SEND_MSG_BACK, header.to_ext_fields()
        )
        processor = self.broker.send_message_back_processor
        response = await processor.process_request(LocalChannel(remote), command)
        if response is None or response.code != ResponseCode.SUCCESS:
            code, remark = (
                (-1, "no answer") if response is None else (response.code, response.remark)
            )
            return status_of_response(code, remark)
        # In the dead letter queue now: the popped original must not come back.
        return await self._ack(group, topic, handle, remote)
