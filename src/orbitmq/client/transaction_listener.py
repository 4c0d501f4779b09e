"""``TransactionListener``: the local transaction of a transactional producer (RocketMQ's
TransactionListener), and how its calls are run."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from orbitmq.client.transaction_verdict import LocalTransactionState
from orbitmq.common import Message, MessageExt

log = logging.getLogger(__name__)

#: What a listener method returns: the state, or (``async def``) an awaitable of it.
ListenerAnswer = LocalTransactionState | Awaitable[LocalTransactionState]


class TransactionListener(Protocol):
    """Decides the fate of a half message. Each method may be a plain function, run on the
    producer's check executor (a thread pool, RocketMQ's checkExecutor), or ``async def``,
    run on the producer's event loop. An exception counts as UNKNOW: the broker checks
    back later."""

    def execute_local_transaction(self, msg: Message, arg: Any) -> ListenerAnswer:
        """Run the local transaction ``msg`` is staged for (``arg`` as given to
        ``send_message_in_transaction``) and say whether to commit the message."""
        ...

    def check_local_transaction(self, msg: MessageExt) -> ListenerAnswer:
        """The broker asks what became of the local transaction of the half ``msg``."""
        ...


async def call_listener(
    method: Callable[..., ListenerAnswer],
    executor: concurrent.futures.Executor,
    *args: Any,
) -> LocalTransactionState:
    """``method(*args)``, awaited if it is ``async def``, else on ``executor``; UNKNOW when
    it raises or answers something else than a state (as RocketMQ logs and leaves it)."""
    state, _error = await run_listener(method, executor, *args)
    return state


async def run_listener(
    method: Callable[..., ListenerAnswer],
    executor: concurrent.futures.Executor,
    *args: Any,
) -> tuple[LocalTransactionState, Exception | None]:
    """As ``call_listener``, with the exception the method raised (None if it answered):
    RocketMQ's producers tell the broker about it in END_TRANSACTION's remark."""
    try:
        if inspect.iscoroutinefunction(method):
            answer = await method(*args)
        else:
            loop = asyncio.get_running_loop()
            answer = await loop.run_in_executor(executor, method, *args)
            if inspect.isawaitable(answer):
                answer = await answer
    except Exception as exc:
        log.exception("transaction listener %s raised: the state is UNKNOW", method)
        return LocalTransactionState.UNKNOW, exc
    if not isinstance(answer, LocalTransactionState):
        log.warning("transaction listener %s answered %r: taken as UNKNOW", method, answer)
        return LocalTransactionState.UNKNOW, None
    return answer, None


def failure_remark(prefix: str, error: Exception | None) -> str | None:
    """END_TRANSACTION's remark when the listener raised (RocketMQ's ``prefix``, then the
    exception), else none."""
    if error is None:
        return None
    return f"{prefix}: {type(error).__name__}: {error}"
