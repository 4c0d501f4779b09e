"""``ConsumerManager``: which connections run which consumer groups, with the subscriptions
their heartbeats declare (RocketMQ's ``ConsumerManager``, ``ConsumerGroupInfo`` and
``ClientChannelInfo``), and the listener that tells a group's consumers when its membership
changed (``DefaultConsumerIdsChangeListener`` with ``Broker2Client.notifyConsumerIdsChanged``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Final

from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.filter import SubscriptionData, SubscriptionParseError, build_subscription
from orbitmq.protocol import (
    ConsumeFromWhere,
    ConsumeType,
    MessageModel,
    RemotingCommand,
    RequestCode,
)
from orbitmq.protocol import SubscriptionData as SubscriptionDataBody
from orbitmq.protocol.header import NotifyConsumerIdsChangedRequestHeader
from orbitmq.protocol.language_code import LanguageCode
from orbitmq.remoting import ChannelContext

log = logging.getLogger(__name__)

#: A channel silent this long (no heartbeat) is dropped by the scan (RocketMQ's
#: ``CHANNEL_EXPIRED_TIMEOUT``).
CHANNEL_EXPIRED_TIMEOUT_MS: Final = 1000 * 120

#: Hears that a group's consumers changed: (group, the group's remaining channels).
ConsumerIdsChangeListener = Callable[[str, list[ChannelContext]], None]


@dataclass(slots=True)
class ClientChannelInfo:
    """One client connection as a registry sees it: the channel, the client's id, language
    and version, and when it last sent a heartbeat. Plain data, owned by its registry."""

    channel: ChannelContext
    client_id: str
    language: LanguageCode
    version: int
    last_update_timestamp_ms: int = 0


def subscription_from_heartbeat(data: SubscriptionDataBody) -> SubscriptionData:
    """The broker's ``SubscriptionData`` for a heartbeat's entry. TAG expressions are parsed
    again here (the same Java hash codes the client computed); an SQL92 entry is kept as
    sent."""
    try:
        return build_subscription(
            data.topic, data.sub_string, data.expression_type, data.sub_version
        )
    except SubscriptionParseError:
        return SubscriptionData(
            data.topic,
            data.sub_string,
            frozenset(data.tags_set),
            frozenset(data.code_set),
            data.expression_type,
            data.sub_version,
        )


class ConsumerGroupInfo:
    """One consumer group on this broker: its channels by channel id, its subscriptions by
    topic, and the consume type, message model and start point the last heartbeat declared.
    Event-loop confined, like its manager."""

    def __init__(
        self,
        group_name: str,
        consume_type: ConsumeType | None,
        message_model: MessageModel | None,
        consume_from_where: ConsumeFromWhere | None,
    ) -> None:
        self.group_name = group_name
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        self.channel_info_table: dict[int, ClientChannelInfo] = {}
        self.subscription_table: dict[str, SubscriptionData] = {}
        self.last_update_timestamp_ms = 0

    def find_channel(self, client_id: str) -> ClientChannelInfo | None:
        for info in self.channel_info_table.values():
            if info.client_id == client_id:
                return info
        return None

    def all_channels(self) -> list[ChannelContext]:
        return [info.channel for info in self.channel_info_table.values()]

    def all_client_ids(self) -> list[str]:
        return [info.client_id for info in self.channel_info_table.values()]

    def unregister_channel(self, channel: ChannelContext) -> bool:
        old = self.channel_info_table.pop(channel.id, None)
        if old is not None:
            log.info("unregister a consumer[%s] from consumerGroupInfo %s", self.group_name, old)
        return old is not None

    def do_channel_close_event(self, channel: ChannelContext) -> bool:
        info = self.channel_info_table.pop(channel.id, None)
        if info is not None:
            log.warning(
                "remove not active channel[%s] from ConsumerGroupInfo, consumer group: %s",
                info.client_id,
                self.group_name,
            )
        return info is not None

    def update_channel(
        self,
        info_new: ClientChannelInfo,
        consume_type: ConsumeType | None,
        message_model: MessageModel | None,
        consume_from_where: ConsumeFromWhere | None,
        now_ms: int,
    ) -> bool:
        """Add or refresh the channel; True when it is new to the group."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        updated = False
        info_old = self.channel_info_table.get(info_new.channel.id)
        if info_old is None:
            self.channel_info_table[info_new.channel.id] = info_new
            log.info("new consumer connected, group: %s %s", self.group_name, info_new.client_id)
            info_old = info_new
            updated = True
        elif info_old.client_id != info_new.client_id:
            log.error(
                "[BUG] consumer channel exist in broker, but clientId not equal. GROUP: %s "
                "OLD: %s NEW: %s",
                self.group_name,
                info_old.client_id,
                info_new.client_id,
            )
            self.channel_info_table[info_new.channel.id] = info_new
            info_old = info_new
        self.last_update_timestamp_ms = now_ms
        info_old.last_update_timestamp_ms = now_ms
        return updated

    def update_subscription(self, subscriptions: Iterable[SubscriptionData], now_ms: int) -> bool:
        """Take the heartbeat's subscriptions: new topics added, newer versions replace older
        ones, topics no longer listed dropped. True when a topic was added or dropped."""
        updated = False
        listed: set[str] = set()
        for sub in subscriptions:
            listed.add(sub.topic)
            old = self.subscription_table.get(sub.topic)
            if old is None:
                self.subscription_table[sub.topic] = sub
                log.info("subscription changed, add new topic, group: %s %s", self.group_name, sub)
                updated = True
            elif sub.sub_version > old.sub_version:
                self.subscription_table[sub.topic] = sub
        for topic in [t for t in self.subscription_table if t not in listed]:
            log.warning("subscription changed, group: %s remove topic %s", self.group_name, topic)
            del self.subscription_table[topic]
            updated = True
        self.last_update_timestamp_ms = now_ms
        return updated

    def find_subscription_data(self, topic: str) -> SubscriptionData | None:
        return self.subscription_table.get(topic)


class ConsumerManager:
    """Owns the table consumer group -> ``ConsumerGroupInfo``, fed by heartbeats and
    emptied by unregistrations, closed channels and the expiry scan. Each change of a group's
    channels or topics is reported to ``on_change`` (when the group allows it).

    Not thread-safe: use from the broker's event loop only (heartbeats, pulls and channel
    events all run there).
    """

    def __init__(
        self, on_change: ConsumerIdsChangeListener | None = None, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self._table: dict[str, ConsumerGroupInfo] = {}
        #: Groups known from their POP requests, not from heartbeats (RocketMQ 5's
        #: consumerCompensationTable): no channels, only their type and subscriptions.
        self.compensation_table: dict[str, ConsumerGroupInfo] = {}
        self._on_change = on_change
        self._clock = clock

    def compensate_basic_consumer_info(
        self, group: str, consume_type: ConsumeType, message_model: MessageModel
    ) -> None:
        info = self.compensation_table.get(group)
        if info is None:
            info = self.compensation_table[group] = ConsumerGroupInfo(group, None, None, None)
        info.consume_type, info.message_model = consume_type, message_model

    def compensate_subscribe_data(
        self, group: str, topic: str, subscription: SubscriptionData
    ) -> None:
        info = self.compensation_table.get(group)
        if info is None:
            info = self.compensation_table[group] = ConsumerGroupInfo(group, None, None, None)
        info.subscription_table[topic] = subscription

    def get_consumer_group_info(self, group: str) -> ConsumerGroupInfo | None:
        return self._table.get(group)

    def groups(self) -> list[str]:
        return list(self._table)

    def message_model(self, group: str) -> MessageModel | None:
        """The message model the group's last heartbeat declared; None when not online."""
        info = self._table.get(group)
        return info.message_model if info is not None else None

    def consume_type(self, group: str) -> ConsumeType | None:
        """How the group's last heartbeat said it consumes; None when not online."""
        info = self._table.get(group)
        return info.consume_type if info is not None else None

    def find_channel(self, group: str, client_id: str) -> ClientChannelInfo | None:
        info = self._table.get(group)
        return info.find_channel(client_id) if info is not None else None

    def find_subscription_data(self, group: str, topic: str) -> SubscriptionData | None:
        """The subscription the group's heartbeats declared for ``topic``; the pull
        processor's ``SubscriptionLookup``."""
        info = self._table.get(group)
        found = info.find_subscription_data(topic) if info is not None else None
        if found is None:
            # RocketMQ 5 falls back to what POP requests declared (fromCompensationTable).
            compensated = self.compensation_table.get(group)
            if compensated is not None:
                return compensated.find_subscription_data(topic)
        return found

    def query_topic_consume_by_who(self, topic: str) -> set[str]:
        return {g for g, info in self._table.items() if topic in info.subscription_table}

    def register_consumer(
        self,
        group: str,
        client_channel_info: ClientChannelInfo,
        consume_type: ConsumeType | None,
        message_model: MessageModel | None,
        consume_from_where: ConsumeFromWhere | None,
        subscriptions: Iterable[SubscriptionData],
        notify_consumer_ids_changed_enable: bool = True,
    ) -> bool:
        """Register (or refresh) a consumer; True when the group's channels or topics
        changed, in which case its consumers are notified."""
        info = self._table.get(group)
        if info is None:
            info = ConsumerGroupInfo(group, consume_type, message_model, consume_from_where)
            self._table[group] = info
        now_ms = self._clock.now_ms()
        r1 = info.update_channel(
            client_channel_info, consume_type, message_model, consume_from_where, now_ms
        )
        r2 = info.update_subscription(subscriptions, now_ms)
        if (r1 or r2) and notify_consumer_ids_changed_enable:
            self._changed(group, info.all_channels())
        return r1 or r2

    def unregister_consumer(
        self, group: str, channel: ChannelContext, notify_consumer_ids_changed_enable: bool = True
    ) -> None:
        info = self._table.get(group)
        if info is None:
            return
        info.unregister_channel(channel)
        if not info.channel_info_table:
            del self._table[group]
            log.info(
                "unregister consumer ok, no any connection, and remove consumer group, %s", group
            )
        if notify_consumer_ids_changed_enable:
            self._changed(group, info.all_channels())

    def do_channel_close_event(self, channel: ChannelContext) -> None:
        """The channel is gone: drop it from every group and notify those groups' other
        consumers (RocketMQ notifies here whatever the group's setting says)."""
        for group, info in list(self._table.items()):
            if not info.do_channel_close_event(channel):
                continue
            if not info.channel_info_table:
                del self._table[group]
                log.info(
                    "unregister consumer ok, no any connection, and remove consumer group, %s",
                    group,
                )
            self._changed(group, info.all_channels())

    def scan_not_active_channel(self) -> list[ChannelContext]:
        """Drop channels without a heartbeat for ``CHANNEL_EXPIRED_TIMEOUT_MS``, closing them;
        returns the channels dropped."""
        now_ms = self._clock.now_ms()
        dropped: list[ChannelContext] = []
        for group, info in list(self._table.items()):
            for channel_id, channel_info in list(info.channel_info_table.items()):
                if now_ms - channel_info.last_update_timestamp_ms > CHANNEL_EXPIRED_TIMEOUT_MS:
                    log.warning(
                        "SCAN: remove expired channel from ConsumerManager consumerTable. "
                        "channel=%s, consumerGroup=%s",
                        channel_info.channel.remote_address,
                        group,
                    )
                    del info.channel_info_table[channel_id]
                    channel_info.channel.close()
                    dropped.append(channel_info.channel)
            if not info.channel_info_table:
                log.warning(
                    "SCAN: remove expired channel from ConsumerManager consumerTable, all clear, "
                    "consumerGroup=%s",
                    group,
                )
                del self._table[group]
        return dropped

    def _changed(self, group: str, channels: list[ChannelContext]) -> None:
        if self._on_change is not None:
            self._on_change(group, channels)


class ConsumerIdsChangeNotifier:
    """The ``ConsumerIdsChangeListener`` that sends NOTIFY_CONSUMER_IDS_CHANGED (40) oneway
    over each remaining consumer's own connection, when ``enabled()`` (the broker's
    notifyConsumerIdsChangedEnable). Stateless; event-loop confined (it writes to
    channels)."""

    def __init__(self, enabled: Callable[[], bool]) -> None:
        self._enabled = enabled

    def __call__(self, group: str, channels: list[ChannelContext]) -> None:
        if not self._enabled():
            return
        for channel in channels:
            notify_consumer_ids_changed(channel, group)


def notify_consumer_ids_changed(channel: ChannelContext, group: str) -> None:
    """``Broker2Client.notifyConsumerIdsChanged``: a failure is logged, never raised."""
    header = NotifyConsumerIdsChangedRequestHeader(consumer_group=group)
    request = RemotingCommand.create_request(
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header.to_ext_fields()
    )
    try:
        channel.invoke_oneway(request)
    except Exception:
        log.exception("notifyConsumerIdsChanged exception, %s %s", group, channel.remote_address)
