"""``LitePullConsumer``: the application asks for messages (RocketMQ's
``DefaultLitePullConsumer``). Queues come from a group rebalance (``subscribe``) or are chosen
by the application (``assign``); a task per queue pulls ahead into a bounded buffer that
``poll`` drains; offsets are committed by ``commit_sync`` or automatically.

::

    async with LitePullConsumer("group", namesrv_addr="127.0.0.1:9876") as consumer:
        consumer.subscribe("TopicTest", "TagA || TagB")   # or: consumer.assign(queues)
        while True:
            for msg in await consumer.poll(timeout_s=1.0):
                ...
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from orbitmq.client.broker_offsets import offset_store_for
from orbitmq.client.consume_message_hook import CONSUME_CONTEXT_TYPE, ConsumeReturnType
from orbitmq.client.consume_service import restore_retry_topic
from orbitmq.client.consumer_config import ConsumerConfig
from orbitmq.client.errors import MQBrokerError, MQClientError
from orbitmq.client.message_selector import MessageSelector
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance, subscribe_queues_of
from orbitmq.client.offset_store import (
    OFFSET_READ_FAILED,
    ReadOffsetType,
    RemoteBrokerOffsetStore,
)
from orbitmq.client.process_queue import ProcessQueue
from orbitmq.client.pull_result import PullStatus
from orbitmq.client.rebalancing_consumer import RebalancingConsumer
from orbitmq.common import SUB_ALL, SYSTEM_CLOCK, Clock, MessageExt, MessageQueue
from orbitmq.common.periodic import run_every
from orbitmq.filter import SubscriptionData, build_subscription_data
from orbitmq.protocol import ConsumerRunningInfo, ConsumeType
from orbitmq.protocol.header import PullMessageRequestHeader
from orbitmq.protocol.pull_sys_flag import FLAG_SUBSCRIPTION, FLAG_SUSPEND

log = logging.getLogger(__name__)

#: Waits of a pull task (RocketMQ's PULL_TIME_DELAY_MILLS_*).
PULL_DELAY_WHEN_CACHE_FLOW_CONTROL_S = 0.05
PULL_DELAY_WHEN_BROKER_FLOW_CONTROL_S = 0.02
PULL_DELAY_ON_EXCEPTION_S = 3.0


@dataclass
class LitePullConsumerConfig(ConsumerConfig):
    """RocketMQ's DefaultLitePullConsumer settings. Times in seconds."""

    #: Messages per pull, and so at most per ``poll``.
    pull_batch_size: int = 10
    #: Buffered messages of all queues (counted as buffered pulls times pull_batch_size).
    pull_threshold_for_all: int = 10000
    consume_max_span: int = 2000
    auto_commit: bool = True
    auto_commit_interval_s: float = 5.0
    poll_timeout_s: float = 5.0
    #: How long the broker holds a pull that finds nothing (long polling) ...
    broker_suspend_max_time_s: float = 20.0
    #: ... and how long the client waits for such a pull's answer.
    consumer_timeout_when_suspend_s: float = 30.0


@dataclass(eq=False)
class _QueueState:
    """One assigned queue: its process queue, where the next pull starts (-1: ask the offset
    store), the consumed offset (the one after the last message ``poll`` returned; -1: none
    yet) and its pull task. A seek replaces the whole state, so requests still buffered
    from the old one are recognised as stale by their dropped process queue."""

    pq: ProcessQueue
    pull_offset: int = -1
    consume_offset: int = -1
    task: asyncio.Task[None] | None = None


@dataclass(slots=True)
class _ConsumeRequest:
    messages: list[MessageExt]
    mq: MessageQueue
    pq: ProcessQueue


class LitePullConsumer(RebalancingConsumer[LitePullConsumerConfig]):
    """Owns the assigned queues' states and pull tasks, the buffer of pulled batches, the
    offset store and (subscribe mode) the group's subscriptions and rebalance loop; owns its
    MQClientInstance unless one is given. One event loop; ``poll`` from one task at a time."""

    CONSUME_TYPE = ConsumeType.CONSUME_ACTIVELY

    def __init__(
        self,
        group: str,
        *,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: LitePullConsumerConfig | None = None,
        instance: MQClientInstance | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        config = config or LitePullConsumerConfig()
        # Checked before a client instance is made; an empty group is still reported first.
        if group and config.pull_batch_size < 1:
            raise MQClientError(f"pull_batch_size {config.pull_batch_size} must be >= 1")
        # The clock also says when an auto commit is due and a poll's wait is over.
        super().__init__(
            group,
            config,
            namesrv_addr=namesrv_addr,
            client_config=client_config,
            instance=instance,
            apply=self._apply_rebalance,
            owned=lambda topic: {mq for mq in self._states if mq.topic == topic},
            clock=clock,
        )
        self._assigned: set[MessageQueue] | None = None  # set once assign() is used
        self._states: dict[MessageQueue, _QueueState] = {}
        self._paused: set[MessageQueue] = set()
        self._buffer: deque[_ConsumeRequest] = deque()
        self._arrived = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._next_auto_commit = 0.0
        self._started = False

    # -- configuration --------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | MessageSelector = SUB_ALL) -> None:
        """Take a share of ``topic``'s queues through the group's rebalance; only messages
        whose tag matches ``expression``, or that a selector takes (``sql("a > 5")``), are
        returned."""
        if self._assigned is not None:
            raise MQClientError("subscribe and assign cannot be mixed on one consumer")
        self.rebalance.subscribe(topic, expression)

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Consume exactly ``queues`` (all tags); no rebalance and no group membership."""
        if self.subscriptions:
            raise MQClientError("subscribe and assign cannot be mixed on one consumer")
        self._assigned = set(queues)
        if self._started:
            self._update_assignment(self._assigned)

    def assignment(self) -> set[MessageQueue]:
        return set(self._states)

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """The readable queues of ``topic``, from a fresh route."""
        route = await self.instance.update_topic_route(topic)
        return sorted(subscribe_queues_of(topic, route))

    # -- lifetime -------------------------------------------------------------------------

    async def start(self) -> None:
        if self._started:
            return
        self.offset_store = offset_store_for(self.config, self.instance, self.group)
        self.offset_store.load()
        subscribing = self._assigned is None
        if subscribing:
            # Assigned consumers stay out of the group: their heartbeat would make them
            # count in the rebalance of subscribing consumers of the same group.
            self.instance.register_consumer(self)
        await self.instance.start()
        await self._start_trace()
        self._started = True
        self._start_timestamp_ms = self._clock.now_ms()
        self._next_auto_commit = self._clock.monotonic() + self.config.auto_commit_interval_s
        self._tasks.append(
            asyncio.create_task(
                run_every(
                    self.instance.config.persist_consumer_offset_interval_s,
                    self.persist_offsets,
                    "offset persistence",
                )
            )
        )
        if subscribing:
            try:
                await self.rebalance.fetch_routes()  # a dead or wrong name server raises
                await self._check_client_in_broker()  # a broker refusing SQL92 raises
            except BaseException:
                await self.shutdown()
                raise
            await self.instance.send_heartbeat_to_all_brokers()
            await self.rebalance.do_rebalance()
            self._tasks.append(asyncio.create_task(self.rebalance.run()))
        elif self._assigned:
            self._update_assignment(self._assigned)

    async def shutdown(self) -> None:
        if not self._started:
            return
        self._started = False
        tasks = [*self._tasks, *(s.task for s in self._states.values() if s.task)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks.clear()
        await self.persist_offsets()
        for state in self._states.values():
            state.pq.dropped = True
        await self._stop_trace()
        if self._assigned is None:
            await self.instance.unregister_consumer(self.group)
        if self._own_instance:
            await self.instance.shutdown()

    # -- rebalance ----------------------------------------------------------------------------

    async def _apply_rebalance(self, wanted: set[MessageQueue]) -> None:
        """Lost queues' offsets are persisted before they go
        (RebalanceLitePullImpl.removeUnnecessaryMessageQueue)."""
        for mq in [mq for mq in self._states if mq not in wanted]:
            await self.offset_store.persist(mq)
        self._update_assignment(wanted)

    def _update_assignment(self, wanted: set[MessageQueue]) -> None:
        for mq in [mq for mq in self._states if mq not in wanted]:
            self._stop_queue(self._states.pop(mq))
            self.offset_store.remove_offset(mq)
            self._paused.discard(mq)
        for mq in sorted(wanted - set(self._states)):
            self.offset_store.remove_offset(mq)
            self._start_queue(mq, _QueueState(ProcessQueue(self._clock)))

    def _start_queue(self, mq: MessageQueue, state: _QueueState) -> None:
        self._states[mq] = state
        state.task = asyncio.create_task(self._pull_loop(mq, state))

    def _stop_queue(self, state: _QueueState) -> None:
        state.pq.dropped = True
        state.pq.clear()
        if state.task is not None:
            state.task.cancel()
        self._forget_stale_requests()

    def _forget_stale_requests(self) -> None:
        self._buffer = deque(r for r in self._buffer if not r.pq.dropped)

    # -- pulling ------------------------------------------------------------------------------

    async def _pull_loop(self, mq: MessageQueue, state: _QueueState) -> None:
        """RocketMQ's PullTaskImpl: flow control, then a long-polling pull whose messages
        go to the buffer, until the queue is dropped or seeks elsewhere."""
        config = self.config
        while not state.pq.dropped:
            if mq in self._paused or self._flow_controlled(state.pq):
                # A resume or a poll wakes nothing here: a short sleep keeps this simple.
                await asyncio.sleep(PULL_DELAY_WHEN_CACHE_FLOW_CONTROL_S)
                continue
            try:
                offset = await self._next_pull_offset(mq, state)
                subscription = self._subscription_of(mq.topic)
                header = PullMessageRequestHeader(
                    consumer_group=self.group,
                    topic=mq.topic,
                    queue_id=mq.queue_id,
                    queue_offset=offset,
                    max_msg_nums=config.pull_batch_size,
                    # Lite pulls long-poll and carry their subscription, never a commit offset.
                    sys_flag=FLAG_SUSPEND | FLAG_SUBSCRIPTION,
                    commit_offset=0,
                    suspend_timeout_millis=int(config.broker_suspend_max_time_s * 1000),
                    subscription=subscription.sub_string,
                    sub_version=subscription.sub_version,
                    expression_type=subscription.expression_type,
                )
                state.pq.last_pull_timestamp = self._clock.now_ms()
                # The master, or the slave the last answer suggested for this queue.
                result = await self.pull_api_wrapper.pull_kernel(
                    mq,
                    header,
                    subscription,
                    config.consumer_timeout_when_suspend_s,
                    message_filter=self.message_filter,
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                flow = isinstance(exc, MQBrokerError) and exc.is_flow_control
                log.warning("pull of %s failed: %s", mq, exc)
                await asyncio.sleep(
                    PULL_DELAY_WHEN_BROKER_FLOW_CONTROL_S if flow else PULL_DELAY_ON_EXCEPTION_S
                )
                continue
            if state.pq.dropped:
                return
            if result.pull_status is PullStatus.FOUND and result.messages:
                state.pq.put_messages(result.messages)
                self._buffer.append(_ConsumeRequest(result.messages, mq, state.pq))
                self._arrived.set()
            elif result.pull_status is PullStatus.OFFSET_ILLEGAL:
                log.warning(
                    "%s: offset %d illegal, moving to %d", mq, offset, result.next_begin_offset
                )
            state.pull_offset = result.next_begin_offset

    def _flow_controlled(self, pq: ProcessQueue) -> bool:
        config = self.config
        if len(self._buffer) * config.pull_batch_size > config.pull_threshold_for_all:
            return True
        reason = pq.pull_pause_reason(
            threshold_count=config.pull_threshold_for_queue,
            threshold_size_mib=config.pull_threshold_size_for_queue_mib,
            max_span=config.consume_max_span,
        )
        return reason is not None

    def _subscription_of(self, topic: str) -> SubscriptionData:
        subscription = self.subscriptions.get(topic)
        if subscription is None:  # assign mode: every message of the queue
            subscription = build_subscription_data(topic, SUB_ALL, 0)
        return subscription

    async def _next_pull_offset(self, mq: MessageQueue, state: _QueueState) -> int:
        if state.pull_offset < 0:
            offset = await self.compute_pull_from_where(mq)
            if offset < 0:
                raise MQClientError(f"no start offset for {mq} yet")
            state.pull_offset = offset
        return state.pull_offset

    # -- polling ------------------------------------------------------------------------------

    async def poll(self, timeout_s: float | None = None) -> list[MessageExt]:
        """The next pulled batch (at most pull_batch_size messages of one queue), or []
        after ``timeout_s`` (default poll_timeout_s). Batches of paused queues stay
        buffered until they are resumed."""
        if not self._started:
            raise MQClientError("the consumer is not started")
        timeout = self.config.poll_timeout_s if timeout_s is None else timeout_s
        if timeout < 0:
            raise MQClientError(f"timeout_s {timeout} must be >= 0")
        now = self._clock.monotonic()
        if self.config.auto_commit and now >= self._next_auto_commit:
            self._commit_to_memory()
            self._next_auto_commit = now + self.config.auto_commit_interval_s
        deadline = now + timeout
        while True:
            self._arrived.clear()
            request = self._take_request()
            if request is not None:
                return self._deliver(request)
            remaining = deadline - self._clock.monotonic()
            if remaining <= 0:
                return []
            try:
                async with asyncio.timeout(remaining):
                    await self._arrived.wait()
            except TimeoutError:
                return []

    def _take_request(self) -> _ConsumeRequest | None:
        self._forget_stale_requests()
        for request in self._buffer:
            if request.mq not in self._paused:
                self._buffer.remove(request)
                return request
        return None

    def _deliver(self, request: _ConsumeRequest) -> list[MessageExt]:
        offset = request.pq.remove_messages(request.messages)
        state = self._states.get(request.mq)
        if offset >= 0 and state is not None and state.pq is request.pq:
            state.consume_offset = offset
        restore_retry_topic(request.messages, self.group)
        if self.hooks:
            # As RocketMQ's lite pull consumer: a poll is a consume that succeeded.
            context = self.before_consume(request.messages, request.mq)
            context.props[CONSUME_CONTEXT_TYPE] = ConsumeReturnType.SUCCESS.name
            self.after_consume(context, True)
        return request.messages

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop pulling ``queues`` and hold back their buffered batches until resumed."""
        self._paused |= set(queues) & set(self._states)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        self._paused -= set(queues)
        self._arrived.set()

    # -- offsets -----------------------------------------------------------------------------

    def _commit_to_memory(self) -> dict[MessageQueue, int]:
        """The offsets committed, by queue: taken now, since a rebalance may drop a queue
        while the caller awaits the broker."""
        committed = {}
        for mq, state in self._states.items():
            if state.consume_offset >= 0 and not state.pq.dropped:
                self.offset_store.update_offset(mq, state.consume_offset, False)
                committed[mq] = state.consume_offset
        return committed

    async def commit_sync(self) -> None:
        """Commit, for every assigned queue, the offset after the last message ``poll``
        returned, and wait until the store (the broker, or the local file) has it."""
        committed = self._commit_to_memory()
        if isinstance(self.offset_store, RemoteBrokerOffsetStore):
            for mq, offset in committed.items():
                await self.offset_store.update_consume_offset_to_broker(mq, offset, False)
        else:
            await self.offset_store.persist_all(set(committed))

    async def committed(self, mq: MessageQueue) -> int:
        """The group's committed offset of ``mq`` (this client's, else the store's); -1 when
        there is none."""
        offset = await self.offset_store.read_offset(mq, ReadOffsetType.MEMORY_FIRST_THEN_STORE)
        if offset == OFFSET_READ_FAILED:
            raise MQClientError(f"fetch of the consume offset of {mq} from the broker failed")
        return offset

    async def consumer_running_info(self) -> ConsumerRunningInfo:
        """GET_CONSUMER_RUNNING_INFO (RocketMQ's DefaultLitePullConsumerImpl): the shared
        report over the queues this consumer holds."""
        return await self._running_info({mq: st.pq for mq, st in self._states.items()}, {})

    async def persist_offsets(self) -> None:
        await self.offset_store.persist_all(set(self._states))

    async def seek(self, mq: MessageQueue, offset: int) -> None:
        """Continue ``mq`` at ``offset`` (between its min and max offsets): what was pulled
        and not polled yet is dropped, and the consumed offset becomes ``offset``."""
        if mq not in self._states:
            raise MQClientError(f"the message queue is not in the assigned list: {mq}")
        low, high = await self.instance.min_offset(mq), await self.instance.max_offset(mq)
        if not low <= offset <= high:
            raise MQClientError(
                f"seek offset {offset} of {mq} is illegal: min offset {low}, max offset {high}"
            )
        old = self._states.get(mq)
        if old is None:  # rebalanced away while we asked the broker
            raise MQClientError(f"the message queue is not in the assigned list: {mq}")
        self._stop_queue(old)
        self._start_queue(
            mq, _QueueState(ProcessQueue(self._clock), pull_offset=offset, consume_offset=offset)
        )

    async def seek_to_begin(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.min_offset(mq))

    async def seek_to_end(self, mq: MessageQueue) -> None:
        await self.seek(mq, await self.instance.max_offset(mq))

    async def offset_for_timestamp(self, mq: MessageQueue, timestamp_ms: int) -> int:
        """The first offset of ``mq`` stored at or after ``timestamp_ms``."""
        return await self.instance.search_offset(mq, timestamp_ms)
