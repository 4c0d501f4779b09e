"""``TelemetryActivity``: the Telemetry RPC, the bidirectional stream each 5.x client keeps
open (RocketMQ 5's proxy ``ClientActivity.telemetry``).

From the client: its Settings (first, and again when they change), ThreadStackTrace and
VerifyMessageResult (answers to the server's commands). To the client: its completed
Settings, answered at once for every Settings received (the Node client 1.0.8 queries its
routes before it waits for this answer, so a late answer would stall its start), and the
commands the broker's services send through the client's ``GrpcClientChannel``
(RecoverOrphanedTransactionCommand, PrintThreadStackTraceCommand, VerifyMessageCommand).

A producer's Settings register it in the broker's ``ProducerManager`` under each topic it
publishes, which is its producer group for transactions (as RocketMQ 5's proxy uses the topic
as the group): the transaction check asks only producers that declared a half's topic. When
the client's last stream ends its channel leaves every registry and its settings are
forgotten.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final

import grpc

from orbitmq.broker.consumer_manager import ClientChannelInfo, ConsumerManager
from orbitmq.broker.producer_manager import ProducerManager
from orbitmq.protocol import CURRENT_VERSION
from orbitmq.protocol.language_code import LanguageCode
from orbitmq.proxy.grpc_access_validator import (
    CLIENT_ID,
    LANGUAGE,
    AclCode,
    GrpcAccessValidator,
    GrpcAclError,
    metadata_dict,
)
from orbitmq.proxy.grpc_client_channel import GrpcChannelManager, GrpcClientChannel
from orbitmq.proxy.grpc_client_settings import GrpcClientSettingsManager
from orbitmq.proxy.malformed_request import MalformedRequest
from orbitmq.proxy.v2 import definition_pb2 as definition
from orbitmq.proxy.v2 import service_pb2 as service

log = logging.getLogger(__name__)

#: ACL refusals end a stream with these gRPC statuses (a stream has no response Status).
_ACL_STATUS: Final = {
    AclCode.UNAUTHORIZED: grpc.StatusCode.UNAUTHENTICATED,
    AclCode.FORBIDDEN: grpc.StatusCode.PERMISSION_DENIED,
}

Validator = Callable[[], GrpcAccessValidator | None]


class TelemetryActivity:
    """Serves Telemetry streams over the shared channel and settings tables. Holds no state
    of its own; use from the broker's event loop (where grpc.aio runs the handlers)."""

    def __init__(
        self,
        channels: GrpcChannelManager,
        settings: GrpcClientSettingsManager,
        producer_manager: ProducerManager,
        consumer_manager: ConsumerManager,
        validator: Validator,
    ) -> None:
        self.channels = channels
        self.settings = settings
        self.producer_manager = producer_manager
        self.consumer_manager = consumer_manager
        self._validator = validator
        #: Hears of each client whose stream ended and who is gone (its id): the receive
        #: side gives its auto-renewed messages back.
        self.on_unregistered: Callable[[str], Awaitable[None]] | None = None

    async def telemetry(self, requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        """Serve one stream until the client ends it (or the call is cancelled): its
        commands are read by a task of their own while this generator writes the channel's
        outbound commands, so that neither side waits for the other."""
        metadata = metadata_dict(context.invocation_metadata())
        client_id = metadata.get(CLIENT_ID, "")
        if not client_id:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, "client id cannot be empty (x-mq-client-id)"
            )
        channel = self.channels.create_channel(client_id, context.peer())
        channel.stream_opened()
        reader = asyncio.create_task(
            self._read(channel, metadata, requests, context), name=f"telemetry {client_id}"
        )
        outbound: asyncio.Future[Any] | None = None
        try:
            while True:
                outbound = asyncio.ensure_future(channel.next_command())
                await asyncio.wait({outbound, reader}, return_when=asyncio.FIRST_COMPLETED)
                if outbound.done():
                    yield outbound.result()
                    continue
                problem = reader.result()
                if problem is not None:
                    await context.abort(*problem)
                return  # the client ended its side: so does the server
        finally:
            # Also when the call is cancelled mid-wait: no task may outlive the stream.
            if outbound is not None:
                outbound.cancel()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, grpc.RpcError):
                await reader
            channel.stream_closed()
            if not channel.is_active:
                self.unregister(channel)
                if self.on_unregistered is not None:
                    with contextlib.suppress(asyncio.CancelledError):
                        await self.on_unregistered(channel.client_id)

    async def _read(
        self,
        channel: GrpcClientChannel,
        metadata: dict[str, str],
        requests: AsyncIterator[Any],
        context: Any,
    ) -> tuple[grpc.StatusCode, str] | None:
        """Handle the client's commands; the status to end the stream with when one is
        refused, None when the client ended its side."""
        peer = context.peer()
        async for command in requests:
            problem = self._process(channel, metadata, peer, command)
            if problem is not None:
                return problem
        return None

    def _process(
        self, channel: GrpcClientChannel, metadata: dict[str, str], peer: str, command: Any
    ) -> tuple[grpc.StatusCode, str] | None:
        """Handle one command; the status to end the stream with when it is refused."""
        if isinstance(command, MalformedRequest):
            return grpc.StatusCode.INVALID_ARGUMENT, command.details
        validator = self._validator()
        if validator is not None:
            try:
                validator.check(metadata, peer, command)
            except GrpcAclError as exc:
                return _ACL_STATUS[exc.code], exc.message
        kind = command.WhichOneof("command")
        if kind == "settings":
            return self._settings(channel, metadata, command.settings)
        if kind in ("thread_stack_trace", "verify_message_result"):
            if not channel.answer(command):
                log.info("gRPC client %s: %s answers no request", channel.client_id, kind)
            return None
        return (
            grpc.StatusCode.INVALID_ARGUMENT,
            f"a client does not send {kind or 'an empty command'} on Telemetry",
        )

    def _settings(
        self, channel: GrpcClientChannel, metadata: dict[str, str], settings: Any
    ) -> tuple[grpc.StatusCode, str] | None:
        pub_sub = settings.WhichOneof("pub_sub")
        if pub_sub is None:
            return (
                grpc.StatusCode.INVALID_ARGUMENT,
                "there is no publishing or subscription data in settings",
            )
        self.settings.update_client_settings(channel.client_id, settings)
        self.register_producer(channel, metadata)
        merged = self.settings.get_client_settings(channel.client_id)
        channel.send_command(
            service.TelemetryCommand(
                status=definition.Status(code=definition.OK, message="OK"), settings=merged
            )
        )
        return None

    def register_producer(self, channel: GrpcClientChannel, metadata: dict[str, str]) -> bool:
        """Register the client as a producer of each topic its settings publish (its
        Heartbeats refresh that: ``ClientActivity``). False when the client has declared no
        publishing settings."""
        settings = self.settings.get_raw_client_settings(channel.client_id)
        if settings is None or not settings.HasField("publishing"):
            return False
        info = ClientChannelInfo(
            channel,
            channel.client_id,
            LanguageCode.parse(metadata.get(LANGUAGE, "OTHER")),
            CURRENT_VERSION,
        )
        for topic in settings.publishing.topics:
            if topic.name:
                self.producer_manager.register_producer(topic.name, info)
        return True

    def unregister(self, channel: GrpcClientChannel) -> None:
        """The client is gone: out of every registry (RocketMQ's CLIENT_UNREGISTER)."""
        self.producer_manager.do_channel_close_event(channel)
        self.consumer_manager.do_channel_close_event(channel)
        self.settings.remove_client_settings(channel.client_id)
        if self.channels.get_channel(channel.client_id) is channel:
            self.channels.remove_channel(channel.client_id)
        log.info("gRPC client %s unregistered: its telemetry stream ended", channel.client_id)
