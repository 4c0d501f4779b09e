"""``Producer``: sends messages to the brokers of a topic (RocketMQ's ``DefaultMQProducer``).

asyncio first: ``async with Producer("group", namesrv_addr=...) as p: await p.send(msg)``.
A send picks a queue round robin (or by a ``MessageQueueSelector``), retries on another
broker when the failure allows it, backs off when brokers ask it to, and never takes longer
than the send timeout in all.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from orbitmq.client.backoff import Backoff
from orbitmq.client.end_transaction_hook import EndTransactionContext, EndTransactionHook
from orbitmq.client.errors import MQBrokerError, MQClientError
from orbitmq.client.latency_fault import MQFaultStrategy
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance, own_or_borrow
from orbitmq.client.send_deadline import SendDeadline
from orbitmq.client.send_result import SendResult, SendStatus
from orbitmq.client.topic_publish_info import TopicPublishInfo
from orbitmq.client.trace.async_trace_dispatcher import (
    TRACE_MAX_MSG_SIZE,
    TRACE_SEND_TIMEOUT_S,
    AsyncTraceDispatcher,
    TraceDispatcherType,
    trace_producer_group,
)
from orbitmq.client.trace.trace_hooks import EndTransactionTraceHook, SendMessageTraceHook
from orbitmq.client.transaction_verdict import TransactionVerdict
from orbitmq.common import (
    SYSTEM_CLOCK,
    AsyncLifetime,
    Clock,
    Message,
    MessageQueue,
    UniqueIdGenerator,
    encode_batch_messages,
    java_string_hash,
    message_properties_to_string,
)
from orbitmq.common import message_const as mc
from orbitmq.common import sys_flag as sf
from orbitmq.common.recall_message_handle import RecallHandleError, RecallMessageHandle
from orbitmq.common.topic import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    RETRY_GROUP_TOPIC_PREFIX,
    send_forbidden_remark,
    topic_problem,
)
from orbitmq.protocol.header import RecallMessageRequestHeader, SendMessageRequestHeader
from orbitmq.remoting import RemotingError

log = logging.getLogger(__name__)

#: The topic whose configuration brokers copy when a send creates a topic (TBW102).
AUTO_CREATE_TOPIC_KEY: Final = AUTO_CREATE_TOPIC_KEY_TOPIC
_UNIQ_IDS = UniqueIdGenerator()


class MessageQueueSelector(Protocol):
    """Chooses the queue of an ordered send: messages with the same ``arg`` (an order key)
    must get the same queue for per-key order (R43)."""

    def __call__(self, mqs: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue: ...


def select_by_hash(mqs: Sequence[MessageQueue], msg: Message, arg: Any) -> MessageQueue:
    """RocketMQ's SelectMessageQueueByHash: ``abs(hash(arg)) % len(mqs)``; strings hash as
    Java's String.hashCode so a Java producer with the same keys picks the same queues."""
    value = java_string_hash(arg) if isinstance(arg, str) else hash(arg)
    return mqs[abs(value) % len(mqs)]


@dataclass
class SendContext:
    """What hooks see around one send attempt (RocketMQ's SendMessageContext)."""

    producer_group: str
    message: Message | list[Message]
    mq: MessageQueue
    broker_addr: str
    result: SendResult | None = None
    exception: BaseException | None = None
    props: dict[str, str] = field(default_factory=dict)
    #: Where a before-hook leaves what its after-hook needs (RocketMQ's mqTraceContext).
    mq_trace_context: object | None = None


class SendMessageHook(Protocol):
    """Called before each send attempt and after it, with its result or exception (R30)."""

    def send_message_before(self, context: SendContext) -> None: ...

    def send_message_after(self, context: SendContext) -> None: ...


@dataclass
class ProducerConfig:
    """RocketMQ's DefaultMQProducer settings, in Python style. Times in seconds."""

    send_msg_timeout_s: float = 3.0
    retry_times_when_send_failed: int = 2
    #: For sends started without waiting (``orbitmq.sync.Producer.send_async``).
    retry_times_when_send_async_failed: int = 2
    retry_another_broker_when_not_store_ok: bool = False
    compress_msg_body_over_howmuch: int = 4096
    compress_level: int = 5
    max_message_size: int = 4 * 1024 * 1024
    default_topic_queue_nums: int = 4
    create_topic_key: str = AUTO_CREATE_TOPIC_KEY
    send_latency_fault_enable: bool = False
    #: Message trace (R41): a Pub record for every send, an EndTransaction record for every
    #: verdict, sent in the background to ``trace_topic`` (RocketMQ's enableMsgTrace and
    #: customizedTraceTopic; None: RMQ_SYS_TRACE_TOPIC).
    enable_trace: bool = False
    trace_topic: str | None = None


class Producer(AsyncLifetime):
    """Owns one producer group's sends and the client instance it runs on (its own unless one
    is given). Use from one event loop; ``orbitmq.sync`` wraps it for threads."""

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: ProducerConfig | None = None,
        instance: MQClientInstance | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        if not group:
            raise MQClientError("producer group is empty")
        self.group = group
        #: Times the attempts of a send and bounds its backoffs (monotonic reading).
        self._clock = clock
        self.config = config or ProducerConfig()
        self.instance, self._own_instance = own_or_borrow(instance, namesrv_addr, client_config)
        self.fault_strategy = MQFaultStrategy(
            send_latency_fault_enable=self.config.send_latency_fault_enable
        )
        self.hooks: list[SendMessageHook] = []
        self.end_transaction_hooks: list[EndTransactionHook] = []
        #: Sends this producer's trace records; set at start when enable_trace is on.
        self.trace_dispatcher: AsyncTraceDispatcher | None = None
        #: Brokers told by a heartbeat (to that broker alone), before this producer's first
        #: send to each, that it is a producer of its group; None (the default): not done.
        #: A producer that answers checks sets a set: a broker asks only producers it knows,
        #: and would know this one only after the periodic heartbeat (30 s by default).
        self._announced: set[str] | None = None
        self._started = False

    async def start(self) -> None:
        self.instance.register_producer(self.group)
        await self.instance.start()
        if self.config.enable_trace and self.trace_dispatcher is None:
            dispatcher = new_trace_dispatcher(
                self.instance, self.group, TraceDispatcherType.PRODUCE, self.config.trace_topic
            )
            await dispatcher.start()
            self.trace_dispatcher = dispatcher
            self.hooks.append(SendMessageTraceHook(dispatcher, self._clock))
            self.end_transaction_hooks.append(EndTransactionTraceHook(dispatcher, self._clock))
        self._started = True

    async def shutdown(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.trace_dispatcher is not None:
            await self.trace_dispatcher.shutdown()  # what is queued is sent first
        await self.instance.unregister_producer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    async def _stop(self) -> None:
        await self.shutdown()

    def register_send_hook(self, hook: SendMessageHook) -> None:
        self.hooks.append(hook)

    def register_end_transaction_hook(self, hook: EndTransactionHook) -> None:
        """``hook`` is called after each verdict a TransactionProducer sends."""
        self.end_transaction_hooks.append(hook)

    def _after_end_transaction(self, context: EndTransactionContext) -> None:
        for hook in self.end_transaction_hooks:
            hook.end_transaction(context)

    # -- sending --------------------------------------------------------------------------

    async def send(
        self,
        msg: Message | Sequence[Message],
        *,
        timeout_s: float | None = None,
        selector: MessageQueueSelector | None = None,
        arg: Any = None,
        queue: MessageQueue | None = None,
        retry_times: int | None = None,
    ) -> SendResult:
        """Send one message, or a batch (several messages of one topic in one request), and
        return where it was stored. ``selector`` and ``arg`` choose the queue for ordered
        sends, ``queue`` names it; both are tried once, as RocketMQ does (retrying elsewhere
        would break the order). Otherwise up to 1 + ``retry_times`` attempts (by default
        retry_times_when_send_failed), each on another broker, within ``timeout_s`` in all."""
        self._check_started()
        timeout = self.config.send_msg_timeout_s if timeout_s is None else timeout_s
        prepared = self._prepare(msg)
        async with self._deadline(prepared.topic, timeout) as deadline:
            info = await self._publish_info(prepared.topic)
            if queue is not None or selector is not None:
                if queue is None:
                    assert selector is not None
                    queue = selector(info.message_queues, prepared.first, arg)
                if info.order_topic:
                    await self._check_order_queue(queue)
                return _answered(await self._send_to(prepared, queue, deadline, oneway=False))
            retries = (
                self.config.retry_times_when_send_failed if retry_times is None else retry_times
            )
            return await self._send_with_retries(prepared, retries, deadline)

    async def _check_order_queue(self, mq: MessageQueue) -> None:
        """A strictly ordered topic's queue (its list fixed by the name server's
        ORDER_TOPIC_CONFIG) whose broker is gone from the route fails the send, as in
        RocketMQ, with an error that says why it does not move to another broker."""
        instance = self.instance
        if not instance.routes_master(mq):
            await instance.update_topic_route(mq.topic)
        if not instance.routes_master(mq):
            raise MQClientError(
                f"The broker[{mq.broker_name}] not exist: topic {mq.topic} is in strict order "
                f"(its queues are fixed by the name server's ORDER_TOPIC_CONFIG), so a send to "
                f"queue {mq.queue_id} of {mq.broker_name} fails until that broker is back "
                "instead of moving to another broker and breaking the order"
            )

    async def send_half(
        self,
        msg: Message | Sequence[Message],
        queue: MessageQueue,
        *,
        timeout_s: float | None = None,
        properties: Mapping[str, str] | None = None,
    ) -> SendResult:
        """Store ``msg`` on ``queue`` as a half message of a transaction, invisible until a
        commit verdict (``end_transactions``); tried once, as sends to a named queue are.
        ``properties`` go on the half itself (a batch's own properties): the message a
        check of it carries has them.

        A batch is staged whole: one half that one verdict commits (its messages stored
        consecutively) or rolls back. That is OrbitMQ's; RocketMQ's brokers stage single
        messages only."""
        self._check_started()
        staged = dict(properties or {})
        staged[mc.PROPERTY_TRANSACTION_PREPARED] = "true"
        staged[mc.PROPERTY_PRODUCER_GROUP] = self.group
        if isinstance(msg, Message):
            msg.properties.update(staged)
            prepared = self._prepare_one(msg)
        else:
            prepared = self._prepare_batch(list(msg), staged)
        # As RocketMQ's producers flag a half; the broker goes by TRAN_MSG.
        prepared = replace(prepared, sys_flag=prepared.sys_flag | sf.TRANSACTION_PREPARED_TYPE)
        timeout = self.config.send_msg_timeout_s if timeout_s is None else timeout_s
        async with self._deadline(prepared.topic, timeout) as deadline:
            await self._publish_info(prepared.topic)  # the route, as a send to a queue has
            return _answered(await self._send_to(prepared, queue, deadline, oneway=False))

    async def send_oneway(self, msg: Message | Sequence[Message]) -> None:
        """Send without waiting for an answer: fastest, and nothing says whether it stored."""
        self._check_started()
        prepared = self._prepare(msg)
        async with self._deadline(prepared.topic, self.config.send_msg_timeout_s) as deadline:
            info = await self._publish_info(prepared.topic)
            mq = self.fault_strategy.select_one_message_queue(info, None)
            await self._send_to(prepared, mq, deadline, oneway=True)

    def _deadline(self, topic: str, timeout_s: float) -> SendDeadline:
        """The whole send's time limit: past it, an error saying what it waited for."""
        return SendDeadline(topic, timeout_s, self.instance.config.namesrv_addresses)

    async def _send_with_retries(
        self, prepared: _Prepared, retry_times: int, deadline: SendDeadline
    ) -> SendResult:
        attempts = 1 + retry_times
        clock = self._clock
        ends = clock.monotonic() + deadline.timeout_s
        backoff = Backoff()
        last_broker: str | None = None
        error: BaseException | None = None
        result: SendResult | None = None
        for _ in range(attempts):
            info = await self._publish_info(prepared.topic)
            mq = self.fault_strategy.select_one_message_queue(info, last_broker)
            last_broker = mq.broker_name
            began = clock.monotonic()
            try:
                result = _answered(await self._send_to(prepared, mq, deadline, oneway=False))
            except (RemotingError, MQBrokerError, MQClientError) as exc:
                elapsed_ms = int((clock.monotonic() - began) * 1000)
                self.fault_strategy.update_fault_item(mq.broker_name, elapsed_ms, True)
                error = deadline.last_error = exc
                if not exc.retriable:
                    raise
                if exc.refresh_route:
                    deadline.waiting_for(f"a refresh of the route of topic {prepared.topic}")
                    await self._refresh_route(prepared.topic)
                if isinstance(exc, MQBrokerError) and exc.is_flow_control:
                    pause = min(backoff.next_delay(), max(0.0, ends - clock.monotonic()))
                    deadline.waiting_for(f"a backoff: broker {mq.broker_name} asked to slow down")
                    await asyncio.sleep(pause)
                log.info("send to %s failed, trying again: %s", mq, exc)
                continue
            elapsed_ms = int((clock.monotonic() - began) * 1000)
            self.fault_strategy.update_fault_item(mq.broker_name, elapsed_ms, False)
            if (
                result.send_status is not SendStatus.SEND_OK
                and self.config.retry_another_broker_when_not_store_ok
            ):
                continue
            return result
        if result is not None:
            return result
        assert error is not None
        raise error

    async def end_transactions(self, sequences: Sequence[Sequence[TransactionVerdict]]) -> None:
        """Verdicts (END_TRANSACTION, answered) on half messages. A sequence is sent in
        order, one verdict at a time (a queue's committed messages are stored in the order
        of their commits); the sequences run at once."""
        self._check_started()

        async def run(sequence: Sequence[TransactionVerdict]) -> None:
            for verdict in sequence:
                addr = await self.instance.find_broker_addr_or_fetch(
                    verdict.broker_name, verdict.topic
                )
                await self.instance.api.end_transaction(
                    addr, verdict.header(self.group), self.config.send_msg_timeout_s
                )

        await asyncio.gather(*(run(s) for s in sequences))

    async def recall_message(self, topic: str, recall_handle: str) -> str:
        """Cancel a delay message before its time (RECALL_MESSAGE, RocketMQ 5.3) with the
        ``recall_handle`` of its SendResult; the recalled message's id. MQClientError for a
        handle that does not decode, MQBrokerError for the broker's refusal (recalls off,
        another topic, its time passed)."""
        self._check_started()
        try:
            handle = RecallMessageHandle.decode(recall_handle)
        except RecallHandleError as exc:
            raise MQClientError(f"recall failed: {exc}") from exc
        addr = await self.instance.find_broker_addr_or_fetch(handle.broker_name, topic)
        header = RecallMessageRequestHeader(
            producer_group=self.group,
            topic=topic,
            recall_handle=recall_handle,
            broker_name=handle.broker_name,
        )
        return await self.instance.api.recall_message(addr, header, self.config.send_msg_timeout_s)

    async def fetch_publish_message_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to ``topic`` may go to, in route order (RocketMQ's
        fetchPublishMessageQueues): for choosing queues before sending."""
        self._check_started()
        return list((await self._publish_info(topic)).message_queues)

    async def _publish_info(self, topic: str) -> TopicPublishInfo:
        return await self.instance.topic_publish_info(
            topic, self.config.create_topic_key, self.config.default_topic_queue_nums
        )

    async def _refresh_route(self, topic: str) -> None:
        try:
            await self.instance.update_topic_route(topic)
        except Exception as exc:
            log.info("route refresh of %s failed: %s", topic, exc)

    async def _send_to(
        self, prepared: _Prepared, mq: MessageQueue, deadline: SendDeadline, *, oneway: bool
    ) -> SendResult | None:
        """One attempt at ``mq``'s broker, between the hooks; None when oneway."""
        addr = await self.instance.find_broker_addr_or_fetch(mq.broker_name, mq.topic)
        if self._announced is not None and mq.broker_name not in self._announced:
            self._announced.add(mq.broker_name)
            await self.instance.send_heartbeat_to_broker(mq.broker_name)
        deadline.waiting_for(f"broker {mq.broker_name} at {addr}", "check that it is running")
        context = SendContext(self.group, prepared.original, mq, addr)
        for hook in self.hooks:
            hook.send_message_before(context)
        header = SendMessageRequestHeader(
            producer_group=self.group,
            topic=mq.topic,
            default_topic=self.config.create_topic_key,
            default_topic_queue_nums=self.config.default_topic_queue_nums,
            queue_id=mq.queue_id,
            sys_flag=prepared.sys_flag,
            born_timestamp=self._clock.now_ms(),
            flag=prepared.flag,
            properties=prepared.properties,
            reconsume_times=prepared.reconsume_times,
            unit_mode=False,
            batch=prepared.batch,
            max_reconsume_times=prepared.max_reconsume_times,
            broker_name=mq.broker_name,
        )
        api = self.instance.api
        try:
            if oneway:
                await api.send_message_oneway(addr, mq.broker_name, header, prepared.body)
                return None
            result = await api.send_message(
                addr,
                mq.broker_name,
                header,
                prepared.body,
                prepared.msg_id,
                self.config.send_msg_timeout_s,
            )
        except BaseException as exc:
            context.exception = exc
            for hook in self.hooks:
                hook.send_message_after(context)
            raise
        context.result = result
        for hook in self.hooks:
            hook.send_message_after(context)
        return result

    # -- validation and encoding ----------------------------------------------------------

    def _check_started(self) -> None:
        if not self._started:
            raise MQClientError(f"The producer service state not OK, group {self.group}: start it")

    def _prepare(self, msg: Message | Sequence[Message]) -> _Prepared:
        if isinstance(msg, Message):
            return self._prepare_one(msg)
        return self._prepare_batch(list(msg))

    def _check(self, msg: Message) -> None:
        problem = topic_problem(msg.topic)
        if problem is not None:
            raise MQClientError(f"topic {msg.topic!r}: {problem}")
        forbidden = send_forbidden_remark(msg.topic)
        if forbidden is not None:
            # Refused here, as RocketMQ's client does, before any network: the broker would
            # answer NO_PERMISSION with the same words.
            raise MQClientError(f"{forbidden} Only the broker writes this system topic.")
        if not msg.body:
            raise MQClientError("the message body is empty")
        if len(msg.body) > self.config.max_message_size:
            raise MQClientError(
                f"the message body size {len(msg.body)} is over the limit "
                f"max_message_size={self.config.max_message_size}"
            )

    def _prepare_one(self, msg: Message) -> _Prepared:
        self._check(msg)
        if mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in msg.properties:
            msg.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = _UNIQ_IDS.create()
        body, sys_flag = msg.body, 0
        if len(body) > self.config.compress_msg_body_over_howmuch:
            # As RocketMQ's clients: zlib, flagged in sysFlag; consumers inflate it.
            body = zlib.compress(body, self.config.compress_level)
            sys_flag |= sf.COMPRESSED_FLAG
        reconsume = msg.properties.get(mc.PROPERTY_RECONSUME_TIME)
        max_reconsume = msg.properties.get(mc.PROPERTY_MAX_RECONSUME_TIMES)
        return _Prepared(
            original=msg,
            first=msg,
            topic=msg.topic,
            body=body,
            sys_flag=sys_flag,
            flag=msg.flag,
            properties=message_properties_to_string(msg.properties),
            msg_id=msg.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX],
            batch=False,
            reconsume_times=int(reconsume) if reconsume else None,
            max_reconsume_times=int(max_reconsume) if max_reconsume else None,
        )

    def _prepare_batch(
        self, msgs: list[Message], properties: Mapping[str, str] | None = None
    ) -> _Prepared:
        """``msgs`` as one batch request; ``properties`` are the batch's own (the broker
        appends them to every message's)."""
        if not msgs:
            raise MQClientError("the batch is empty")
        topic = msgs[0].topic
        for m in msgs:
            self._check(m)
            if m.topic != topic:
                raise MQClientError(
                    f"the topic of the messages in one batch should be the same: {m.topic!r} "
                    f"and {topic!r}"
                )
            if m.delay_time_level > 0:
                raise MQClientError("TimeDelayLevel is not supported for batching")
            if m.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                raise MQClientError("Retry Group is not supported for batching")
            if mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX not in m.properties:
                m.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] = _UNIQ_IDS.create()
        body = encode_batch_messages(msgs)
        if len(body) > self.config.max_message_size:
            raise MQClientError(
                f"the batch's encoded size {len(body)} is over the limit "
                f"max_message_size={self.config.max_message_size}"
            )
        return _Prepared(
            original=msgs,
            first=msgs[0],
            topic=topic,
            body=body,
            sys_flag=0,
            flag=0,
            properties=message_properties_to_string(properties) if properties else "",
            msg_id=",".join(m.properties[mc.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX] for m in msgs),
            batch=True,
            reconsume_times=None,
            max_reconsume_times=None,
        )


def new_trace_dispatcher(
    instance: MQClientInstance, host_group: str, kind: TraceDispatcherType, topic: str | None
) -> AsyncTraceDispatcher:
    """A dispatcher of ``host_group``'s trace records over a producer of its own group on
    the same client instance (RocketMQ's trace producer: 5 s send timeout, 128000-byte
    messages, no trace of its own)."""
    sender = Producer(
        trace_producer_group(host_group, kind),
        instance=instance,
        config=ProducerConfig(
            send_msg_timeout_s=TRACE_SEND_TIMEOUT_S, max_message_size=TRACE_MAX_MSG_SIZE
        ),
    )
    return AsyncTraceDispatcher(sender, topic)


def _answered(result: SendResult | None) -> SendResult:
    assert result is not None  # only oneway sends go unanswered
    return result


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A message or batch checked and encoded once, sent by every attempt."""

    original: Message | list[Message]
    first: Message
    topic: str
    body: bytes
    sys_flag: int
    flag: int
    properties: str
    msg_id: str
    batch: bool
    reconsume_times: int | None
    max_reconsume_times: int | None
