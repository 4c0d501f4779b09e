"""``TransactionProducer``: sends messages in transactions (RocketMQ's
``TransactionMQProducer``): a half message, the local transaction, then its verdict; and
answers the broker's checks of halves whose verdict it never got."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from dataclasses import dataclass
from typing import Any

from orbitmq.client.end_transaction_hook import EndTransactionContext
from orbitmq.client.mq_client_instance import ClientConfig, MQClientInstance
from orbitmq.client.producer import Producer, ProducerConfig
from orbitmq.client.send_result import SendResult, SendStatus
from orbitmq.client.transaction_listener import (
    TransactionListener,
    failure_remark,
    run_listener,
)
from orbitmq.client.transaction_verdict import LocalTransactionState, TransactionVerdict
from orbitmq.common import SYSTEM_CLOCK, Clock, Message, MessageExt
from orbitmq.common import message_const as mc
from orbitmq.protocol.header import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
)

log = logging.getLogger(__name__)

#: Threads of the check executor that runs plain (not ``async def``) listener methods
#: (RocketMQ's checkThreadPoolMinSize is 1; a few let slow checks overlap).
CHECK_THREADS = 4
#: How long a check's answer may take to send (RocketMQ's checkTransactionState: 3000 ms).
CHECK_ANSWER_TIMEOUT_S = 3.0
#: Where RocketMQ's producer puts the send answer's transaction id on the message it hands
#: the listener's executeLocalTransaction.
TRANSACTION_ID_PROPERTY = "__transactionId__"


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    """Where the half was stored and what the local transaction decided (RocketMQ's
    TransactionSendResult). Immutable, so safe to share."""

    send_result: SendResult
    local_transaction_state: LocalTransactionState


class TransactionProducer(Producer):
    """A producer whose sends are transactions: owns, besides a ``Producer``'s, its
    ``transaction_listener``, the thread pool that runs the listener's plain methods and
    the checks under way. Use from one event loop; ``orbitmq.sync`` wraps it for threads."""

    def __init__(
        self,
        group: str,
        *,
        transaction_listener: TransactionListener,
        namesrv_addr: str | None = None,
        client_config: ClientConfig | None = None,
        config: ProducerConfig | None = None,
        instance: MQClientInstance | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        super().__init__(
            group,
            namesrv_addr=namesrv_addr,
            client_config=client_config,
            config=config,
            instance=instance,
            clock=clock,
        )
        self.transaction_listener = transaction_listener
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._checks: set[asyncio.Task[None]] = set()
        self._announced = set()  # brokers know it before they have a half to ask about

    async def start(self) -> None:
        self._executor = concurrent.futures.ThreadPoolExecutor(
            CHECK_THREADS, thread_name_prefix=f"orbitmq-tx-check-{self.group}"
        )
        self.instance.transaction_checkers[self.group] = self
        await super().start()

    async def shutdown(self) -> None:
        self.instance.transaction_checkers.pop(self.group, None)
        if self._checks:
            # As RocketMQ's checkExecutor.shutdown(): checks under way still answer, within
            # a send's timeout; past it they are dropped and the broker asks again later.
            _done, late = await asyncio.wait(self._checks, timeout=self.config.send_msg_timeout_s)
            for task in late:
                task.cancel()
            await asyncio.gather(*late, return_exceptions=True)
        await super().shutdown()
        if self._executor is not None:
            # A plain listener method still running is not waited for: its answer is dropped.
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None

    async def send_message_in_transaction(
        self, msg: Message, arg: Any = None
    ) -> TransactionSendResult:
        """Stage ``msg`` as a half message (one broker, tried once: R8), run the listener's
        ``execute_local_transaction(msg, arg)``, and send its verdict, UNKNOW included (as
        RocketMQ's endTransaction: the broker ignores it and checks back later). A half not
        stored (``send_status`` other than SEND_OK) is rolled back without running the
        listener."""
        self._check_started()
        if mc.PROPERTY_DELAY_TIME_LEVEL in msg.properties:
            # As RocketMQ: a delayed transactional message would bypass the half topic.
            del msg.properties[mc.PROPERTY_DELAY_TIME_LEVEL]
        info = await self._publish_info(msg.topic)
        queue = self.fault_strategy.select_one_message_queue(info, None)
        result = await self.send_half(msg, queue)
        error = None
        if result.send_status is SendStatus.SEND_OK:
            if result.transaction_id is not None:
                # As RocketMQ's sendMessageInTransaction, for the listener to see.
                msg.properties[TRANSACTION_ID_PROPERTY] = result.transaction_id
            state, error = await run_listener(
                self.transaction_listener.execute_local_transaction,
                self._thread_pool(),
                msg,
                arg,
            )
        else:
            state = LocalTransactionState.ROLLBACK_MESSAGE
        verdict = TransactionVerdict.of_half(result, state)
        try:
            addr = await self._end_transaction(
                verdict, failure_remark("executeLocalTransactionBranch exception", error)
            )
            self._after_end_transaction(
                EndTransactionContext(
                    self.group, addr, msg, result.msg_id, result.transaction_id, state, False
                )
            )
        except Exception as exc:
            # As RocketMQ: the half is stored, so the broker's check settles it.
            log.warning("verdict %s on half %s not sent: %s", state.name, result.msg_id, exc)
        return TransactionSendResult(result, state)

    def check_transaction_state(
        self, broker_addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """The broker at ``broker_addr`` asks what became of the half ``msg``: the listener's
        ``check_local_transaction`` answers, in a task of its own."""
        task = asyncio.create_task(self._answer_check(broker_addr, msg, header))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def _answer_check(
        self, broker_addr: str, msg: MessageExt, header: CheckTransactionStateRequestHeader
    ) -> None:
        """RocketMQ's checkTransactionState: END_TRANSACTION fromTransactionCheck naming the
        half as the check did, its msgId the half's UNIQ_KEY (else its offset id), oneway;
        UNKNOW is sent too (the broker ignores it and asks again next interval)."""
        state, error = await run_listener(
            self.transaction_listener.check_local_transaction, self._thread_pool(), msg
        )
        unique_key = msg.unique_key or msg.msg_id
        end = EndTransactionRequestHeader(
            producer_group=self.group,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=state.value,
            from_transaction_check=True,
            msg_id=unique_key,
            transaction_id=header.transaction_id,
            broker_name=header.broker_name,
        )
        try:
            await self.instance.api.end_transaction(
                broker_addr,
                end,
                CHECK_ANSWER_TIMEOUT_S,
                remark=failure_remark("checkLocalTransactionState Exception", error),
                oneway=True,
            )
        except Exception as exc:
            log.warning("answer to the check of half %s not sent: %s", unique_key, exc)
            return
        self._after_end_transaction(
            EndTransactionContext(
                self.group, broker_addr, msg, unique_key, header.transaction_id, state, True
            )
        )

    async def _end_transaction(self, verdict: TransactionVerdict, remark: str | None) -> str:
        """The verdict as END_TRANSACTION, oneway (as RocketMQ's endTransactionOneway); the
        address of the broker it went to."""
        addr = await self.instance.find_broker_addr_or_fetch(verdict.broker_name, verdict.topic)
        await self.instance.api.end_transaction(
            addr,
            verdict.header(self.group),
            self.config.send_msg_timeout_s,
            remark=remark,
            oneway=True,
        )
        return addr

    def _thread_pool(self) -> concurrent.futures.Executor:
        assert self._executor is not None  # between start and shutdown
        return self._executor
