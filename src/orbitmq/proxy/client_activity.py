"""``ClientActivity``: Heartbeat and NotifyClientTermination (RocketMQ 5's proxy
``ClientActivity``): a 5.x client's heartbeat registers it with the broker's
``ProducerManager`` (under each topic it publishes: the topic is its producer group) or
``ConsumerManager`` (its group, with the subscriptions of its settings), so the broker's
admin requests (consumer connections, producer lists) see gRPC clients as they see remoting
ones; its termination unregisters it.

What a client declared is known from its Telemetry settings; the tables of settings and of
client channels are the ones Telemetry fills (``ClientSettingsSource``, ``ClientChannels``).
A client that declared nothing is answered UNRECOGNIZED_CLIENT_TYPE, as RocketMQ's proxy
answers it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

from orbitmq.broker import BrokerController, ClientChannelInfo
from orbitmq.filter import Sql92ParseError, SubscriptionParseError, parse_sql92
from orbitmq.filter.tag_filter import SubscriptionData, build_subscription
from orbitmq.protocol import CURRENT_VERSION
from orbitmq.protocol.body.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel
from orbitmq.protocol.language_code import LanguageCode
from orbitmq.proxy.grpc_status import (
    OK_STATUS,
    GrpcProxyError,
    status,
    validate_consumer_group,
)
from orbitmq.proxy.proxy_context import ProxyContext
from orbitmq.proxy.v2 import definition_pb2 as d
from orbitmq.proxy.v2 import service_pb2 as pb
from orbitmq.remoting import ChannelContext

_NO_SETTINGS: Final = "cannot find client settings for this client"
#: A 5.x consumer's kind as the broker's ConsumerManager knows consumers.
_CONSUME_TYPE: Final = {
    d.PUSH_CONSUMER: ConsumeType.CONSUME_PASSIVELY,
    d.SIMPLE_CONSUMER: ConsumeType.CONSUME_ACTIVELY,
}


class ClientSettingsSource(Protocol):
    """Each client's settings as it declared them on Telemetry, by client id."""

    def get_client_settings(self, client_id: str) -> Any | None: ...

    def remove_client_settings(self, client_id: str) -> Any | None: ...


class ClientChannels(Protocol):
    """Each gRPC client's ``ChannelContext``, by client id (made on first use)."""

    def create_channel(self, client_id: str, peer: str) -> ChannelContext: ...

    def remove_channel(self, client_id: str) -> ChannelContext | None: ...


def subscriptions_of(settings: Any) -> list[SubscriptionData]:
    """A consumer's subscriptions (its settings' entries) as the broker keeps them;
    GrpcProxyError ILLEGAL_FILTER_EXPRESSION for one that does not parse."""
    result = []
    for entry in settings.subscription.subscriptions:
        expression = entry.expression
        kind = "SQL92" if expression.type == d.SQL else "TAG"
        try:
            if kind == "SQL92":
                parse_sql92(expression.expression)  # refused now, not at each receive
            result.append(build_subscription(entry.topic.name, expression.expression or "*", kind))
        except (SubscriptionParseError, Sql92ParseError) as exc:
            raise GrpcProxyError(d.ILLEGAL_FILTER_EXPRESSION, str(exc)) from exc
    return result


class ClientActivity:
    """Answers Heartbeat and NotifyClientTermination over the settings and channel tables.
    Holds no state of its own; use from the broker's event loop."""

    def __init__(
        self,
        broker: BrokerController,
        settings: ClientSettingsSource,
        channels: ClientChannels,
        *,
        on_terminated: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        """``on_terminated`` hears of each client that said it terminates (its id)."""
        self.broker = broker
        self.settings = settings
        self.channels = channels
        self.on_terminated = on_terminated

    def _info(self, ctx: ProxyContext, context: Any) -> ClientChannelInfo:
        if not ctx.client_id:
            raise GrpcProxyError(d.CLIENT_ID_REQUIRED, "rpc metadata has no client id")
        channel = self.channels.create_channel(ctx.client_id, context.peer())
        language = LanguageCode.parse(ctx.language or "OTHER")
        return ClientChannelInfo(channel, ctx.client_id, language, CURRENT_VERSION)

    async def heartbeat(self, request: pb.HeartbeatRequest, context: Any) -> Any:
        ctx = ProxyContext.of(context)
        settings = self.settings.get_client_settings(ctx.client_id)
        if settings is None:
            return pb.HeartbeatResponse(status=status(d.UNRECOGNIZED_CLIENT_TYPE, _NO_SETTINGS))
        kind = settings.client_type
        if kind == d.PRODUCER:
            info = self._info(ctx, context)
            for topic in settings.publishing.topics:
                if topic.name:
                    self.broker.producer_manager.register_producer(topic.name, info)
        elif kind in _CONSUME_TYPE:
            validate_consumer_group(request.group.name)
            self.broker.consumer_manager.register_consumer(
                request.group.name,
                self._info(ctx, context),
                _CONSUME_TYPE[kind],
                MessageModel.CLUSTERING,
                ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
                subscriptions_of(settings),
            )
        else:
            name = d.ClientType.Name(kind)
            return pb.HeartbeatResponse(status=status(d.UNRECOGNIZED_CLIENT_TYPE, name))
        return pb.HeartbeatResponse(status=OK_STATUS)

    async def notify_client_termination(
        self, request: pb.NotifyClientTerminationRequest, context: Any
    ) -> Any:
        ctx = ProxyContext.of(context)
        settings = self.settings.remove_client_settings(ctx.client_id)
        if settings is None:
            return pb.NotifyClientTerminationResponse(
                status=status(d.UNRECOGNIZED_CLIENT_TYPE, _NO_SETTINGS)
            )
        kind = settings.client_type
        if kind == d.PRODUCER:
            channel = self.channels.remove_channel(ctx.client_id)
            if channel is not None:
                for topic in settings.publishing.topics:
                    self.broker.producer_manager.unregister_producer(topic.name, channel)
        elif kind in _CONSUME_TYPE:
            validate_consumer_group(request.group.name)
            channel = self.channels.remove_channel(ctx.client_id)
            if channel is not None:
                self.broker.consumer_manager.unregister_consumer(request.group.name, channel)
        else:
            name = d.ClientType.Name(kind)
            return pb.NotifyClientTerminationResponse(
                status=status(d.UNRECOGNIZED_CLIENT_TYPE, name)
            )
        if self.on_terminated is not None:
            await self.on_terminated(ctx.client_id)
        return pb.NotifyClientTerminationResponse(status=OK_STATUS)
