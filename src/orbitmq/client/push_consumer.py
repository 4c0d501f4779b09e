"""``PushConsumer``: messages handed to a listener as they arrive (RocketMQ's
``DefaultMQPushConsumer``: rebalance, one long-polling pull loop per queue, process queues,
a consume service, offsets committed every 5 s and carried on pulls).

::

    async def on_messages(msgs, context):
        ...                                   # return None (success) or raise (retry)

    consumer = PushConsumer("group", namesrv_addr="127.0.0.1:9876")
    consumer.subscribe("TopicTest", "TagA || TagB")
    consumer.register_listener(on_messages)   # or orderly=True for per-queue order
    await consumer.start()
"""

from __future__ import annotations

import asyncio
import logging

from orbitmq.client.broker_offsets import offset_store_for
from orbitmq.client.client_admin_processor import consume_directly
from orbitmq.client.consume_service import (
    ConcurrentConsumeService,
    ConsumeService,
    OrderlyConsumeService,
)
from orbitmq.client.consumer_config import Listener, PushConsumerConfig
from orbitmq.client.errors import MQClientError
from orbitmq.client.message_selector import MessageSelector
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance
from orbitmq.client.offset_store import (
    ReadOffsetType,
)
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.pull_result import PullStatus
from orbitmq.client.rebalancing_consumer import RebalancingConsumer
from orbitmq.common import SUB_ALL, SYSTEM_CLOCK, Clock, MessageExt, MessageQueue
from orbitmq.common.periodic import run_every
from orbitmq.common.topic import retry_topic
from orbitmq.protocol import (
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    ConsumeType,
    LockBatchRequestBody,
    MessageModel,
    UnlockBatchRequestBody,
)
from orbitmq.protocol.body.consumer_running import (
    PROP_CONSUME_ORDERLY,
    PROP_THREADPOOL_CORE_SIZE,
)
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_COMMIT_OFFSET, FLAG_SUBSCRIPTION, FLAG_SUSPEND

log = logging.getLogger(__name__)

#: How long to wait after a pull error, and while flow control holds a queue.
PULL_TIME_DELAY_WHEN_EXCEPTION_S = 3.0
PULL_TIME_DELAY_WHEN_FLOW_CONTROL_S = 0.05


class PushConsumer(RebalancingConsumer[PushConsumerConfig]):
    """Owns a consumer group's subscriptions, its share of the queues (rebalanced at start,
    every 20 s and when the broker says the group changed), a pull loop and a process queue
    per owned queue, the consume service and the offset store. One event loop."""

    CONSUME_TYPE = ConsumeType.CONSUME_PASSIVELY

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: PushConsumerConfig | None = None,
        instance: MQClientInstance | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        super().__init__(
            group,
            config or PushConsumerConfig(),
            namesrv_addr=namesrv_addr,
            client_config=client_config,
            instance=instance,
            apply=self._update_process_queues,
            owned=lambda topic: {mq for mq in self.process_queues if mq.topic == topic},
            clock=clock,
        )
        self.process_queues: dict[MessageQueue, ProcessQueue] = {}
        self._listener: Listener | None = None
        self._orderly = False
        self._consume_service: ConsumeService | None = None
        self._pull_tasks: dict[MessageQueue, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False

    # -- configuration --------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = SUB_ALL) -> None:
        """Consume ``topic``'s messages whose tag matches ``expression`` ("TagA || TagB",
        or "*" for all), or that a selector takes (``sql("a > 5")``)."""
        self.rebalance.subscribe(topic, expression)

    def register_listener(self, listener: Listener, *, orderly: bool = False) -> None:
        """``listener(messages, context)``: ``async def`` or a plain function (run on a thread
        pool of consume_thread_max threads). Returning nothing means success, raising means
        retry. ``orderly`` gives each queue's messages one at a time in offset order."""
        self._listener = listener
        self._orderly = orderly

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._listener is None:
            raise MQClientError("register a listener before start")
        if not self.subscriptions:
            raise MQClientError("subscribe to a topic before start")
        clustering = self.config.message_model is MessageModel.CLUSTERING
        if clustering:
            # Every clustering consumer also takes its group's retries (R31).
            retry = retry_topic(self.group)
            if retry not in self.subscriptions:
                self.rebalance.subscribe(retry, SUB_ALL)
        self.offset_store = offset_store_for(self.config, self.instance, self.group)
        self.offset_store.load()
        self._consume_service = (
            OrderlyConsumeService(self, self._listener)
            if self._orderly
            else ConcurrentConsumeService(self, self._listener)
        )
        self.instance.register_consumer(self)
        try:
            await self.instance.start()
            await self._start_trace()
            await self.rebalance.fetch_routes()  # a dead or wrong name server raises
            await self._check_client_in_broker()  # a broker refusing SQL92 raises
        except BaseException:
            await self._undo_start()
            raise
        await self.instance.send_heartbeat_to_all_brokers()
        self._started = True
        self._start_timestamp_ms = self._clock.now_ms()
        await self.rebalance.do_rebalance()
        self._tasks = [
            asyncio.create_task(self.rebalance.run()),
            asyncio.create_task(
                run_every(
                    self.instance.config.persist_consumer_offset_interval_s,
                    self.persist_offsets,
                    "offset persistence",
                )
            ),
            asyncio.create_task(
                run_every(
                    max(1.0, self.config.consume_timeout_s / 4),
                    self.clean_expired_messages,
                    "consume timeout cleaning",
                )
            ),
        ]
        if self._orderly and clustering:
            self._tasks.append(
                asyncio.create_task(
                    run_every(self.config.lock_renew_interval_s, self.lock_all, "queue locks")
                )
            )

    async def _undo_start(self) -> None:
        """A start that failed before anything ran leaves nothing behind: no registration,
        no consume threads, no connections of its own."""
        assert self._consume_service is not None
        await self._consume_service.shutdown()
        await self._stop_trace()
        await self.instance.unregister_consumer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    async def shutdown(self) -> None:
        if not self._started:
            return
        self._started = False
        for task in [*self._tasks, *self._pull_tasks.values()]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._pull_tasks.values(), return_exceptions=True)
        self._tasks.clear()
        self._pull_tasks.clear()
        if self._consume_service is not None:
            await self._consume_service.shutdown()
        await self.persist_offsets()
        if self._orderly and self.config.message_model is MessageModel.CLUSTERING:
            await self.unlock_all()
        for pq in self.process_queues.values():
            pq.dropped = True
        await self._stop_trace()
        await self.instance.unregister_consumer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    # -- what the client instance asks ------------------------------------------------------

    async def reset_offset(self, topic: str, offsets: dict[MessageQueue, int]) -> None:
        """The broker reset the group's offsets in ``topic`` (an admin's reset by time): drop
        those queues, commit the new offsets, and let the rebalance start them again there
        (RocketMQ's MQClientInstance.resetOffset)."""
        for mq in [mq for mq in self.process_queues if mq.topic == topic and mq in offsets]:
            self._stop_queue(mq)
        instance = self.instance
        for mq, offset in offsets.items():
            self.offset_store.update_offset(mq, offset, False)
            if self.config.message_model is MessageModel.CLUSTERING:
                addr = await instance.find_broker_addr_or_fetch(mq.broker_name, mq.topic)
                # Answered, not oneway: the rebalance below reads it back from the broker.
                await instance.api.update_consumer_offset(
                    addr, self.group, mq, offset, instance.config.mq_client_api_timeout_s
                )
        if self.config.message_model is MessageModel.BROADCASTING:
            await self.offset_store.persist_all(set(offsets))
        await self.rebalance.do_rebalance()

    # -- owned queues ------------------------------------------------------------------------

    async def _update_process_queues(self, wanted: set[MessageQueue]) -> None:
        for mq in [mq for mq in self.process_queues if mq not in wanted]:
            await self._drop(mq)
        clustering = self.config.message_model is MessageModel.CLUSTERING
        for mq in sorted(wanted - set(self.process_queues)):
            if self._orderly and clustering and not await self._lock(mq):
                continue  # another consumer still holds it; next round
            self.offset_store.remove_offset(mq)
            offset = await self.compute_pull_from_where(mq)
            if offset < 0:
                log.warning("no start offset for %s yet", mq)
                continue
            pq = ProcessQueue(self._clock)
            if self._orderly and clustering:
                pq.locked = True
                pq.last_lock_timestamp = self._clock.now_ms()
            self.process_queues[mq] = pq
            log.info("%s starts pulling %s from %d", self.group, mq, offset)
            self._pull_tasks[mq] = asyncio.create_task(self._pull_loop(mq, pq, offset))

    def _stop_queue(self, mq: MessageQueue) -> None:
        """Stop pulling and consuming ``mq``: its process queue is dropped, its pull task
        cancelled; in-flight listener calls finish but commit nothing."""
        self.process_queues.pop(mq).dropped = True
        task = self._pull_tasks.pop(mq, None)
        if task is not None:
            task.cancel()

    async def _drop(self, mq: MessageQueue) -> None:
        self._stop_queue(mq)
        await self.offset_store.persist(mq)
        self.offset_store.remove_offset(mq)
        if self._orderly and self.config.message_model is MessageModel.CLUSTERING:
            await self._unlock(mq)

    # -- pulling ----------------------------------------------------------------------------

    async def _pull_loop(self, mq: MessageQueue, pq: ProcessQueue, offset: int) -> None:
        """One queue's pulls, each held by the broker until messages come (long polling)."""
        subscription = self.subscriptions.get(mq.topic)
        if subscription is None:
            return
        config = self.config
        clustering = config.message_model is MessageModel.CLUSTERING
        while not pq.dropped:
            reason = pq.pull_pause_reason(
                threshold_count=config.pull_threshold_for_queue,
                threshold_size_mib=config.pull_threshold_size_for_queue_mib,
                max_span=config.consume_concurrently_max_span,
                orderly=self._orderly,
            )
            if reason is not None:
                await asyncio.sleep(PULL_TIME_DELAY_WHEN_FLOW_CONTROL_S)
                continue
            if self._orderly and clustering and not pq.locked:
                # RocketMQ's pullMessage: an orderly queue is pulled only while locked at its
                # master (with the master down it is not: nothing is read from the slave).
                await asyncio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_S)
                continue
            commit_offset = 0
            sys_flag = FLAG_SUSPEND | FLAG_SUBSCRIPTION
            if clustering:
                commit_offset = await self.offset_store.read_offset(
                    mq, ReadOffsetType.READ_FROM_MEMORY
                )
                if commit_offset > 0:
                    sys_flag |= FLAG_COMMIT_OFFSET
            header = PullMessageRequestHeader(
                consumer_group=self.group,
                topic=mq.topic,
                queue_id=mq.queue_id,
                queue_offset=offset,
                max_msg_nums=config.pull_batch_size,
                sys_flag=sys_flag,
                commit_offset=max(commit_offset, 0),
                suspend_timeout_millis=int(config.broker_suspend_max_time_s * 1000),
                subscription=subscription.sub_string,
                sub_version=subscription.sub_version,
                expression_type=subscription.expression_type,
            )
            pq.last_pull_timestamp = self._clock.now_ms()
            try:
                # The master, or the slave the last answer suggested for this queue.
                result = await self.pull_api_wrapper.pull_kernel(
                    mq,
                    header,
                    subscription,
                    config.broker_suspend_max_time_s + 15,
                    message_filter=self.message_filter,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.warning("pull of %s failed: %s", mq, exc)
                await asyncio.sleep(PULL_TIME_DELAY_WHEN_EXCEPTION_S)
                continue
            if pq.dropped:
                return
            if result.pull_status is PullStatus.OFFSET_ILLEGAL:
                log.warning(
                    "%s: offset %d illegal, moving to %d", mq, offset, result.next_begin_offset
                )
                self.offset_store.update_offset(mq, result.next_begin_offset, False)
                offset = result.next_begin_offset
                continue
            if result.pull_status is not PullStatus.FOUND or not result.messages:
                if not pq.msg_count:
                    # Nothing in flight: the queue's progress is the next offset.
                    self.offset_store.update_offset(mq, result.next_begin_offset, True)
                offset = result.next_begin_offset
                continue
            offset = result.next_begin_offset
            pq.put_messages(result.messages)
            assert self._consume_service is not None
            self._consume_service.submit(result.messages, pq, mq)
            if config.pull_interval_s > 0:
                await asyncio.sleep(config.pull_interval_s)

    async def consumer_running_info(self) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO (RocketMQ's DefaultMQPushConsumerImpl): the shared
        report, with the push consumer's orderly flag and thread count."""
        return await self._running_info(
            self.process_queues,
            {
                PROP_CONSUME_ORDERLY: "true" if self._orderly else "false",
                PROP_THREADPOOL_CORE_SIZE: str(self.config.consume_thread_min),
            },
        )

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult:
        """CONSUME_MESSAGE_DIRECTLY: the listener takes ``msg`` alone, outside the queues."""
        if self._listener is None:
            raise MQClientError("register a listener before consuming")
        mq = MessageQueue(msg.topic, broker_name or "", msg.queue_id)
        return await consume_directly(self._listener, msg, mq, self.group, orderly=self._orderly)

    # -- what the consume services need -----------------------------------------------------

    async def send_message_back(self, msg: MessageExt, delay_level: int) -> bool:
        """CONSUMER_SEND_MSG_BACK to the broker that stored ``msg``; False if that failed."""
        broker_name = self._broker_of(msg)
        try:
            addr = (
                await self.instance.find_broker_addr_or_fetch(broker_name, msg.topic)
                if broker_name
                else _address_of(msg)
            )
            await self.instance.api.consumer_send_message_back(
                addr,
                msg,
                self.group,
                delay_level,
                self.config.effective_max_reconsume_times,
                self.instance.config.mq_client_api_timeout_s,
            )
            return True
        except Exception as exc:
            log.warning("send back of %s failed: %s", msg.msg_id, exc)
            return False

    def _broker_of(self, msg: MessageExt) -> str:
        for mq in self.process_queues:
            if mq.topic in (msg.topic, retry_topic(self.group)) and mq.queue_id == msg.queue_id:
                return mq.broker_name
        return ""

    # -- periodic duties ---------------------------------------------------------------------

    async def persist_offsets(self) -> None:
        await self.offset_store.persist_all(set(self.process_queues))

    async def clean_expired_messages(self) -> None:
        """Messages held by the listener longer than consume_timeout are sent back and
        removed, so one stuck message cannot hold the queue's offset for ever (R25)."""
        if self._orderly:
            return
        now_ms = self._clock.now_ms()
        timeout_ms = int(self.config.consume_timeout_s * 1000)
        for mq, pq in list(self.process_queues.items()):
            for msg in pq.expired_messages(timeout_ms, now_ms):
                if await self.send_message_back(msg, 3):
                    offset = pq.remove_messages([msg])
                    if offset >= 0:
                        self.offset_store.update_offset(mq, offset, True)

    async def lock_all(self) -> None:
        """Renew the locks of every owned queue; queues the broker refuses stop consuming."""
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in self.process_queues:
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        now = self._clock.now_ms()
        for broker_name, mqs in by_broker.items():
            locked = await self._lock_batch(broker_name, mqs)
            for mq in mqs:
                pq = self.process_queues.get(mq)
                if pq is None:
                    continue
                pq.locked = mq in locked
                if pq.locked:
                    pq.last_lock_timestamp = now
                    assert self._consume_service is not None
                    self._consume_service.submit([], pq, mq)

    async def _lock(self, mq: MessageQueue) -> bool:
        return mq in await self._lock_batch(mq.broker_name, {mq})

    async def _lock_batch(self, broker_name: str, mqs: set[MessageQueue]) -> set[MessageQueue]:
        topic = next(iter(mqs)).topic
        try:
            addr = await self.instance.find_broker_addr_or_fetch(broker_name, topic)
            body = LockBatchRequestBody(
                consumer_group=self.group, client_id=self.instance.client_id, mq_set=set(mqs)
            )
            return await self.instance.api.lock_batch_mq(
                addr, body, self.instance.config.mq_client_api_timeout_s
            )
        except Exception as exc:
            log.warning("lock of %d queue(s) at %s failed: %s", len(mqs), broker_name, exc)
            return set()

    async def _unlock(self, mq: MessageQueue) -> None:
        await self._unlock_batch(mq.broker_name, {mq})

    async def unlock_all(self) -> None:
        by_broker: dict[str, set[MessageQueue]] = {}
        for mq in self.process_queues:
            by_broker.setdefault(mq.broker_name, set()).add(mq)
        for broker_name, mqs in by_broker.items():
            await self._unlock_batch(broker_name, mqs)

    async def _unlock_batch(self, broker_name: str, mqs: set[MessageQueue]) -> None:
        addr = self.instance.find_broker_addr(broker_name)
        if addr is None:
            return
        body = UnlockBatchRequestBody(
            consumer_group=self.group, client_id=self.instance.client_id, mq_set=set(mqs)
        )
        try:
            await self.instance.api.unlock_batch_mq(
                addr, body, self.instance.config.mq_client_api_timeout_s, oneway=True
            )
        except Exception as exc:
            log.info("unlock at %s failed: %s", broker_name, exc)


def _address_of(msg: MessageExt) -> str:
    host, port = msg.store_host[0], msg.store_host[1]
    return f"{host}:{port}"
