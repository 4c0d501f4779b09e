"""``GrpcClientChannel``: a 5.x client, seen by the broker's registries as a connection
(RocketMQ 5's proxy ``GrpcClientChannel``), and ``GrpcChannelManager``, its table by client id.

The broker's producer and consumer managers, its transaction check and its admin requests
talk to clients through ``ChannelContext``s. A gRPC client has no remoting connection: what
the broker would write to one becomes a ``TelemetryCommand`` on the client's Telemetry
stream, the only way the server can speak first:

- CHECK_TRANSACTION_STATE (oneway) -> RecoverOrphanedTransactionCommand, carrying the half
  message (with its body digest) and a transaction id that locates the half;
- GET_CONSUMER_RUNNING_INFO -> PrintThreadStackTraceCommand; the client's ThreadStackTrace
  with the same nonce answers it (a ConsumerRunningInfo with the stack as jstack);
- CONSUME_MESSAGE_DIRECTLY -> VerifyMessageCommand; VerifyMessageResult answers it;
- anything else (NOTIFY_CONSUMER_IDS_CHANGED...) means nothing to a 5.x client: dropped.

Outbound commands wait in a queue that the stream's writer drains, bounded in count and in
bytes: a client that stops reading its stream fills it and further commands are dropped
(logged and counted), so memory stays bounded and the broker's loop never waits for a
client. A dropped transaction check is asked again at the next check interval.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections.abc import Callable
from typing import Any, Final

import orjson

from orbitmq.common.message import SocketAddress
from orbitmq.common.message_decoder import decode_message
from orbitmq.protocol import RemotingCommand, RequestCode, ResponseCode
from orbitmq.protocol.header import CheckTransactionStateRequestHeader
from orbitmq.proxy.proxy_context import peer_address
from orbitmq.proxy.transaction_id import encode_transaction_id
from orbitmq.proxy.v2 import service_pb2 as service
from orbitmq.remoting import RemotingSendRequestError, RemotingTimeoutError

log = logging.getLogger(__name__)

#: Commands (and their bytes) waiting for a client's stream; beyond either a client is not
#: reading. The bytes fit four checks of maxMessageSize (4 MiB) halves.
MAX_PENDING_COMMANDS: Final = 1024
MAX_PENDING_BYTES: Final = 16 * 1024 * 1024
#: gRPC channels count down so that they never share an id with a remoting connection.
_ids = itertools.count(-1, -1)
_UNKNOWN: Final[SocketAddress] = ("0.0.0.0", 0)
#: The Code values the client's answers carry (apache.rocketmq.v2.Code).
_OK: Final = 20000
_VERIFY_FIFO_MESSAGE_UNSUPPORTED: Final = 50502
_FAILED_TO_CONSUME_MESSAGE: Final = 60000
_MESSAGE_CORRUPTED: Final = 40016

MessageBuilder = Callable[[Any], Any]


class GrpcClientChannel:
    """One 5.x client (by client id) as a ``ChannelContext``. Owns the queue of commands for
    its Telemetry stream and the futures of requests waiting for its answers. Use from the
    broker's event loop only."""

    def __init__(
        self, client_id: str, peer: str, message_builder: MessageBuilder, broker_name: str
    ) -> None:
        self.client_id = client_id
        self._id = next(_ids)
        self._remote = peer_address(peer)
        self._attributes: dict[str, object] = {}
        self._build_message = message_builder
        self._broker_name = broker_name
        self.outbound: asyncio.Queue[Any] = asyncio.Queue(MAX_PENDING_COMMANDS)
        self.pending_bytes = 0
        self._streams = 0
        self._closed = False
        self._waiting: dict[str, asyncio.Future[Any]] = {}
        self.dropped_count = 0

    # -- ChannelContext ----------------------------------------------------------------------

    @property
    def id(self) -> int:
        return self._id

    @property
    def remote_address(self) -> str:
        host, port = self._remote
        return f"{host}:{port}"

    @property
    def remote_socket_address(self) -> SocketAddress:
        return self._remote

    @property
    def local_socket_address(self) -> SocketAddress:
        return _UNKNOWN

    @property
    def attributes(self) -> dict[str, object]:
        return self._attributes

    @property
    def is_active(self) -> bool:
        """A Telemetry stream is open: the broker can reach the client."""
        return self._streams > 0 and not self._closed

    def write(self, command: RemotingCommand) -> bool:
        return False  # a 5.x client takes no remoting frames

    def invoke_oneway(self, request: RemotingCommand) -> None:
        if not self.is_active:
            raise RemotingSendRequestError(
                f"gRPC client {self.client_id} at {self.remote_address} has no telemetry stream"
            )
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            self.send_command(self._recover_command(request))
        else:
            log.debug(
                "gRPC client %s: request %d has no telemetry form", self.client_id, request.code
            )

    async def invoke(self, request: RemotingCommand, timeout_s: float) -> RemotingCommand:
        if not self.is_active:
            raise RemotingSendRequestError(
                f"gRPC client {self.client_id} at {self.remote_address} has no telemetry stream"
            )
        nonce = uuid.uuid4().hex
        if request.code == RequestCode.GET_CONSUMER_RUNNING_INFO:
            command = service.TelemetryCommand(
                print_thread_stack_trace_command=service.PrintThreadStackTraceCommand(nonce=nonce)
            )
        elif request.code == RequestCode.CONSUME_MESSAGE_DIRECTLY:
            message = self._build_message(decode_message(request.body))
            command = service.TelemetryCommand(
                verify_message_command=service.VerifyMessageCommand(nonce=nonce, message=message)
            )
        else:
            return RemotingCommand.create_response(
                request, ResponseCode.REQUEST_CODE_NOT_SUPPORTED, "not supported by a gRPC client"
            )
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[nonce] = future
        try:
            self.send_command(command)
            try:
                answer = await asyncio.wait_for(future, timeout_s)
            except TimeoutError as exc:
                raise RemotingTimeoutError(
                    f"wait response on the telemetry stream of {self.client_id} timeout, "
                    f"{round(timeout_s * 1000)}(ms)"
                ) from exc
        finally:
            self._waiting.pop(nonce, None)
        return _relay_response(request, answer)

    def close(self) -> None:
        self._closed = True
        for future in self._waiting.values():
            if not future.done():
                future.cancel()

    # -- the Telemetry stream ----------------------------------------------------------------

    def stream_opened(self) -> None:
        self._streams += 1
        self._closed = False

    def stream_closed(self) -> None:
        self._streams = max(0, self._streams - 1)

    def send_command(self, command: Any) -> bool:
        """Queue ``command`` for the client's stream; False (and counted) when the client
        has not read the ones before it."""
        size = command.ByteSize()
        if self.outbound.full() or self.pending_bytes + size > MAX_PENDING_BYTES:
            self.dropped_count += 1
            log.warning(
                "gRPC client %s reads no telemetry: %d commands (%d bytes) wait; dropped one",
                self.client_id,
                self.outbound.qsize(),
                self.pending_bytes,
            )
            return False
        self.outbound.put_nowait(command)
        self.pending_bytes += size
        return True

    async def next_command(self) -> Any:
        """The oldest command waiting for the stream (waits for one)."""
        command = await self.outbound.get()
        self.pending_bytes -= command.ByteSize()
        return command

    def answer(self, command: Any) -> bool:
        """A ThreadStackTrace or VerifyMessageResult from the client: completes the request
        waiting for its nonce. False when none waits (a late or unsolicited answer)."""
        kind = command.WhichOneof("command")
        nonce = str(getattr(command, kind).nonce) if kind else ""
        future = self._waiting.pop(nonce, None)
        if future is None or future.done():
            return False
        future.set_result(command)
        return True

    def _recover_command(self, request: RemotingCommand) -> Any:
        header = CheckTransactionStateRequestHeader.from_ext_fields(request.ext_fields)
        half = decode_message(request.body)
        transaction_id = encode_transaction_id(
            header.commit_log_offset, header.tran_state_table_offset
        )
        return service.TelemetryCommand(
            recover_orphaned_transaction_command=service.RecoverOrphanedTransactionCommand(
                message=self._build_message(half), transaction_id=transaction_id
            )
        )


def _relay_response(request: RemotingCommand, answer: Any) -> RemotingCommand:
    """The remoting answer a client's telemetry answer stands for (RocketMQ 5's
    ``reportThreadStackTrace`` and ``buildConsumeMessageDirectlyResult``)."""
    code = int(answer.status.code) if answer.HasField("status") else _OK
    kind = answer.WhichOneof("command")
    if kind == "thread_stack_trace":
        if code != _OK:
            remark = (
                "forbidden to verify message" if code == _VERIFY_FIFO_MESSAGE_UNSUPPORTED else None
            )
            return RemotingCommand.create_response(
                request, ResponseCode.SYSTEM_ERROR, remark or "print thread stack failed"
            )
        body = {"properties": {}, "jstack": answer.thread_stack_trace.thread_stack_trace}
        return _json_response(request, body)
    result = {
        _OK: "CR_SUCCESS",
        _FAILED_TO_CONSUME_MESSAGE: "CR_LATER",
        _MESSAGE_CORRUPTED: "CR_RETURN_NULL",
    }.get(code, "CR_THROW_EXCEPTION")
    return _json_response(
        request,
        {"order": False, "autoCommit": True, "consumeResult": result, "remark": "from gRPC client"},
    )


def _json_response(request: RemotingCommand, body: dict[str, Any]) -> RemotingCommand:
    response = RemotingCommand.create_response(request, ResponseCode.SUCCESS, None)
    response.body = orjson.dumps(body)
    return response


class GrpcChannelManager:
    """Owns the table client id -> ``GrpcClientChannel`` (RocketMQ 5's GrpcChannelManager).
    Use from the broker's event loop only."""

    def __init__(self, message_builder: MessageBuilder, broker_name: str) -> None:
        self._channels: dict[str, GrpcClientChannel] = {}
        self._build_message = message_builder
        self._broker_name = broker_name

    def create_channel(self, client_id: str, peer: str) -> GrpcClientChannel:
        """The client's channel, made on first use."""
        channel = self._channels.get(client_id)
        if channel is None:
            channel = GrpcClientChannel(client_id, peer, self._build_message, self._broker_name)
            self._channels[client_id] = channel
        return channel

    def get_channel(self, client_id: str) -> GrpcClientChannel | None:
        return self._channels.get(client_id)

    def remove_channel(self, client_id: str) -> GrpcClientChannel | None:
        channel = self._channels.pop(client_id, None)
        if channel is not None:
            channel.close()
        return channel

    def __len__(self) -> int:
        return len(self._channels)
