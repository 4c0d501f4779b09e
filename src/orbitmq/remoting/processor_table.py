"""``ProcessorTable``: request code -> processor, and the one place where failures become
RocketMQ's system response codes (REQUEST_CODE_NOT_SUPPORTED, SYSTEM_BUSY, SYSTEM_ERROR)."""

from __future__ import annotations

import asyncio
import logging
import os
import traceback
from collections.abc import Callable, Coroutine, Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from orbitmq.protocol import RESPONSE_FLAG, RemotingCommand, ResponseCode
from orbitmq.remoting.channel_context import ChannelContext
from orbitmq.remoting.errors import RequestRefusedError
from orbitmq.remoting.request_executor import DEFAULT_CAPACITY, RequestExecutor
from orbitmq.remoting.request_processor import RequestProcessor
from orbitmq.remoting.rpc_hook import RPCHook
from orbitmq.remoting.rpc_metrics import RpcLatencyRecorder

log = logging.getLogger(__name__)

#: RocketMQ's remarks (NettyRemotingAbstract.processRequestCommand), kept byte for byte:
#: clients and operators match on them.
NOT_SUPPORTED_REMARK: Final = " request type {code} not supported"
REJECT_REQUEST_REMARK: Final = "[REJECTREQUEST]system busy, start flow control for a while"
OVERLOAD_REMARK: Final = "[OVERLOAD]system busy, start flow control for a while"

#: Runs a request's work as a task of the connection; the callback runs once the task is
#: done, however it ended (even cancelled before its first step).
Spawn = Callable[[Coroutine[Any, Any, None], Callable[[], None]], "asyncio.Task[None]"]
#: The connection attribute holding the unsupported codes already warned about.
_NOT_SUPPORTED_WARNED: Final = "orbitmq.remoting.not_supported_warned"


class Registration(NamedTuple):
    processor: RequestProcessor
    executor: RequestExecutor


def exception_simple_desc(error: BaseException) -> str:
    """The SYSTEM_ERROR remark, shaped like RocketMQ's ``RemotingHelper.exceptionSimpleDesc``
    (``Throwable.toString()``, then the frame that raised): ``ValueError: bad, fn(file.py:7)``."""
    kind = type(error)
    name = (
        kind.__qualname__
        if kind.__module__ == "builtins"
        else f"{kind.__module__}.{kind.__qualname__}"
    )
    message = str(error)
    text = f"{name}: {message}" if message else name
    frames = traceback.extract_tb(error.__traceback__)
    if frames:
        frame = frames[-1]
        text += f", {frame.name}({os.path.basename(frame.filename)}:{frame.lineno})"
    return text


def _warn_not_supported_once(ctx: ChannelContext, code: int, remark: str) -> None:
    """One WARNING per unsupported code per connection. A peer that sends an unsupported
    code (a client pointed at the wrong kind of server, an admin tool newer than us)
    usually repeats it, and the peer, not this server, has the problem: its error says so.
    Later repeats on the same connection are logged at DEBUG."""
    warned = ctx.attributes.setdefault(_NOT_SUPPORTED_WARNED, set())
    assert isinstance(warned, set)
    if code in warned:
        log.debug("%s%s", ctx.remote_address, remark)
        return
    warned.add(code)
    log.warning(
        "%s%s (further requests with this code on this connection are logged at DEBUG)",
        ctx.remote_address,
        remark,
    )


class ProcessorTable:
    """Owns the routing of one server or client: code -> (processor, executor), plus an
    optional default for codes not listed (RocketMQ's ``registerDefaultProcessor``).

    ``dispatch`` admits a request or answers it at once, and the task it starts maps a
    processor's exception to SYSTEM_ERROR: the only place in OrbitMQ that produces
    REQUEST_CODE_NOT_SUPPORTED, SYSTEM_BUSY and SYSTEM_ERROR. Registration happens at wiring
    time, before serving; everything runs on one event loop (not thread-safe).
    """

    def __init__(self, public_executor: RequestExecutor | None = None) -> None:
        #: Serves processors registered without an executor (RocketMQ's publicExecutor,
        #: bounded here).
        self.public_executor = public_executor or RequestExecutor("public", DEFAULT_CAPACITY)
        self._table: dict[int, Registration] = {}
        self._default: Registration | None = None
        #: Counts each answered request's latency when the server exports metrics (None:
        #: not counted, nothing paid).
        self.rpc_latency: RpcLatencyRecorder | None = None
        #: Run before every admitted request reaches its processor (RocketMQ's
        #: registerRPCHook): a hook that raises RequestRefusedError answers it instead.
        self.rpc_hooks: list[RPCHook] = []
        #: The serving loop's clock, taken once: in Python 3.11 every
        #: ``asyncio.get_running_loop()`` costs a getpid system call.
        self._loop_time: Callable[[], float] | None = None

    def register_processor(
        self,
        code: int,
        processor: RequestProcessor,
        executor: RequestExecutor | int | None = None,
    ) -> None:
        """Route ``code`` to ``processor``. ``executor`` bounds its requests in flight: a
        shared ``RequestExecutor``, a capacity for a private one, or None for the public one.
        A second registration of a code replaces the first (as in RocketMQ)."""
        self._table[int(code)] = Registration(processor, self._executor(code, executor))

    def register_default_processor(
        self, processor: RequestProcessor, executor: RequestExecutor | int | None = None
    ) -> None:
        """Answer every code without its own registration."""
        self._default = Registration(processor, self._executor("default", executor))

    def _executor(self, name: object, executor: RequestExecutor | int | None) -> RequestExecutor:
        if executor is None:
            return self.public_executor
        if isinstance(executor, RequestExecutor):
            return executor
        return RequestExecutor(str(name), executor)

    @property
    def registrations(self) -> Mapping[int, Registration]:
        """The table, read-only: what each code is routed to."""
        return MappingProxyType(self._table)

    @property
    def default(self) -> Registration | None:
        return self._default

    def lookup(self, code: int) -> Registration | None:
        return self._table.get(code, self._default)

    # -- the boundary -----------------------------------------------------------------------

    def dispatch(self, ctx: ChannelContext, request: RemotingCommand, spawn: Spawn) -> None:
        """Handle one request from ``ctx``: answer it at once (unknown code, rejected,
        overloaded) or start its processing with ``spawn``. Never raises for a request."""
        registration = self.lookup(request.code)
        if registration is None:
            remark = NOT_SUPPORTED_REMARK.format(code=request.code)
            _warn_not_supported_once(ctx, request.code, remark)
            self._answer(ctx, request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark)
            return
        processor, executor = registration
        try:
            rejected = processor.reject_request()
        except Exception as exc:
            log.exception("reject_request of %r failed", processor)
            self._answer(ctx, request, ResponseCode.SYSTEM_ERROR, exception_simple_desc(exc))
            return
        if rejected:
            self._answer(ctx, request, ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
            return
        loop_time = self._loop_time
        if loop_time is None:
            loop_time = self._loop_time = asyncio.get_running_loop().time
        if not executor.try_admit():
            if executor.note_refusal(loop_time()):
                log.warning(
                    "%s, too many requests and %r busy, request code: %d",
                    ctx.remote_address,
                    executor,
                    request.code,
                )
            self._answer(ctx, request, ResponseCode.SYSTEM_BUSY, OVERLOAD_REMARK)
            return
        admitted_at = loop_time()
        try:
            # Released when the task is done, not in a finally in _serve: a task cancelled
            # before its first step never enters the coroutine.
            spawn(self._serve(ctx, registration, request, admitted_at, self), executor.release)
        except BaseException:
            executor.release()
            raise

    @staticmethod
    async def _start(
        ctx: ChannelContext,
        registration: Registration,
        request: RemotingCommand,
        admitted: float,
        table: ProcessorTable,
    ) -> RemotingCommand | None:
        """Run the hooks and the processor, unless the request waited over its executor's
        limit since it was admitted: then the answer is SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]."""
        processor, executor = registration
        rpc_hooks = table.rpc_hooks
        assert table._loop_time is not None  # set by dispatch, which admitted the request
        waited_ms = (table._loop_time() - admitted) * 1000
        remark = executor.expired_remark(waited_ms)
        if remark is None:
            try:
                for hook in rpc_hooks:
                    hook.do_before_request(ctx.remote_address, request)
            except RequestRefusedError as refused:
                log.warning(
                    "%s, request code %d refused: %s", ctx.remote_address, request.code, refused
                )
                return RemotingCommand.create_response(
                    request, ResponseCode.SYSTEM_ERROR, refused.remark
                )
            return await processor.process_request(ctx, request)
        log.debug("%s, request code %d: %s", ctx.remote_address, request.code, remark)
        return RemotingCommand.create_response(request, ResponseCode.SYSTEM_BUSY, remark)

    @staticmethod
    async def _serve(
        ctx: ChannelContext,
        registration: Registration,
        request: RemotingCommand,
        admitted: float,
        table: ProcessorTable,
    ) -> None:
        executor = registration.executor
        rpc_latency = table.rpc_latency
        try:
            if executor.concurrency is None:  # the usual case: no slot to wait for
                response = await ProcessorTable._start(ctx, registration, request, admitted, table)
            else:
                response = await executor.run(
                    lambda: ProcessorTable._start(ctx, registration, request, admitted, table)
                )
            if response is None or request.is_oneway:
                return
            response.opaque = request.opaque
            response.flag |= RESPONSE_FLAG
            response.serialize_type = request.serialize_type
            ctx.write(response)
            if rpc_latency is not None:
                rpc_latency.record(request.code, response.code, admitted)
        except Exception as exc:
            log.exception(
                "process request code %d opaque %d from %s failed",
                request.code,
                request.opaque,
                ctx.remote_address,
            )
            ProcessorTable._answer(
                ctx, request, ResponseCode.SYSTEM_ERROR, exception_simple_desc(exc)
            )

    @staticmethod
    def _answer(ctx: ChannelContext, request: RemotingCommand, code: int, remark: str) -> None:
        # Oneway requests are never answered, not even with these codes: the sender does not
        # wait, and a Java client would only log the stray response.
        if not request.is_oneway:
            ctx.write(RemotingCommand.create_response(request, code, remark))
