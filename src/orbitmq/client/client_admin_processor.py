"""``ClientAdminProcessor``: the admin requests a broker relays to this client over its
connection (the admin half of RocketMQ's ``ClientRemotingProcessor``):

- GET_CONSUMER_RUNNING_INFO (307): one consumer group's settings, subscriptions, queues held
  and rates (``ConsumerRunningInfo``), as mqadmin consumerStatus shows them;
- CONSUME_MESSAGE_DIRECTLY (309): hand one stored message to the group's listener outside
  its queues and say what the listener answered (``ConsumeMessageDirectlyResult``), as
  mqadmin consumeMessage does; offsets and retries are not touched.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Callable, Mapping
from typing import Final, Protocol, runtime_checkable

from orbitmq.client.consume_service import restore_retry_topic
from orbitmq.client.consumer_config import ConsumeContext, ConsumeResult, Listener
from orbitmq.common import MessageExt, MessageQueue, decode_message
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.body import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
)
from orbitmq.protocol.body.consumer_running import (
    PROP_CLIENT_VERSION,
    PROP_NAMESERVER_ADDR,
)
from orbitmq.protocol.header import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
)
from orbitmq.remoting import ChannelContext, CodeDispatchingProcessor

log = logging.getLogger(__name__)

#: The version our requests carry (``CURRENT_VERSION`` 409), as MQVersion names it.
CLIENT_VERSION_DESC: Final = "V4_9_8"


@runtime_checkable
class RunningInfoSource(Protocol):
    """A consumer that can describe itself (RocketMQ's MQConsumerInner.consumerRunningInfo)."""

    async def consumer_running_info(self) -> ConsumerRunningInfo: ...


@runtime_checkable
class DirectConsumer(Protocol):
    """A consumer with a listener that can take one message outside its queues (RocketMQ's
    ConsumeMessageService.consumeMessageDirectly)."""

    async def consume_message_directly(
        self, msg: MessageExt, broker_name: str | None
    ) -> ConsumeMessageDirectlyResult: ...


class ClientAdminProcessor(CodeDispatchingProcessor):
    """Answers 307 and 309 for the consumers of one client instance, found by group in
    ``consumers`` (the instance's live table). Runs on the instance's event loop; owns
    nothing."""

    def __init__(
        self,
        consumers: Mapping[str, object],
        namesrv_addresses: Callable[[], list[str]],
    ) -> None:
        self._consumers = consumers
        self._namesrv_addresses = namesrv_addresses
        super().__init__(
            {
                RequestCode.GET_CONSUMER_RUNNING_INFO: self._get_consumer_running_info,
                RequestCode.CONSUME_MESSAGE_DIRECTLY: self._consume_message_directly,
            }
        )

    async def _get_consumer_running_info(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = GetConsumerRunningInfoRequestHeader.from_ext_fields(request.ext_fields)
        consumer = self._consumers.get(header.consumer_group)
        if not isinstance(consumer, RunningInfoSource):
            return _not_here(request, header.consumer_group)
        info = await consumer.consumer_running_info()
        # RocketMQ's MQClientInstance adds these two to what the consumer says.
        info.properties[PROP_NAMESERVER_ADDR] = "".join(f"{a};" for a in self._namesrv_addresses())
        info.properties[PROP_CLIENT_VERSION] = CLIENT_VERSION_DESC
        if header.jstack_enable:
            info.jstack = _task_stacks()
        return RemotingCommand.create_success(request, body=info.to_json())

    async def _consume_message_directly(
        self, ctx: ChannelContext, request: RemotingCommand
    ) -> RemotingCommand:
        header = ConsumeMessageDirectlyResultRequestHeader.from_ext_fields(request.ext_fields)
        consumer = self._consumers.get(header.consumer_group)
        if not isinstance(consumer, DirectConsumer):
            return _not_here(request, header.consumer_group)
        msg = decode_message(request.body)
        result = await consumer.consume_message_directly(msg, header.broker_name)
        return RemotingCommand.create_success(request, body=result.to_json())


def _not_here(request: RemotingCommand, group: str) -> RemotingCommand:
    return RemotingCommand.create_response(
        request,
        ResponseCode.SYSTEM_ERROR,
        f"The Consumer Group <{group}> not exist in this consumer",
    )


def _task_stacks() -> str:
    """The stacks of the loop's tasks: what a Java client's jstack shows of its threads."""
    lines: list[str] = []
    for task in asyncio.all_tasks():
        lines.append(f"Task {task.get_name()}")
        lines.extend(
            f"    at {frame.f_code.co_name} ({frame.f_code.co_filename}:{frame.f_lineno})"
            for frame in task.get_stack()
        )
    return "\n".join(lines) + "\n"


async def consume_directly(
    listener: Listener,
    msg: MessageExt,
    mq: MessageQueue,
    group: str,
    *,
    orderly: bool,
) -> ConsumeMessageDirectlyResult:
    """Run ``listener`` on ``msg`` alone and report its answer: nothing or SUCCESS is
    CR_SUCCESS, a failure answer CR_LATER, a raise CR_THROW_EXCEPTION with the error as the
    remark. A plain function runs on a worker thread, as consumption runs it."""
    restore_retry_topic([msg], group)
    context = ConsumeContext(mq)
    result = ConsumeMessageDirectlyResult(order=orderly, auto_commit=True)
    began = time.monotonic()
    try:
        if inspect.iscoroutinefunction(listener):
            answer = await listener([msg], context)
        else:
            answer = await asyncio.to_thread(listener, [msg], context)
            if inspect.isawaitable(answer):
                answer = await answer
    except Exception as exc:
        log.warning("consume message directly failed: %s", msg.msg_id, exc_info=True)
        result.consume_result = CMResult.CR_THROW_EXCEPTION
        result.remark = f"{type(exc).__name__}: {exc}"
    else:
        ok = answer is None or answer is ConsumeResult.SUCCESS
        result.consume_result = CMResult.CR_SUCCESS if ok else CMResult.CR_LATER
    result.spent_time_mills = int((time.monotonic() - began) * 1000)
    return result
