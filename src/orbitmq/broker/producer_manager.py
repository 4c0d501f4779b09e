"""``ProducerManager``: which connections run which producer groups (RocketMQ's
``ProducerManager``), so that transaction checks can reach a group's producers."""

from __future__ import annotations

import logging
from typing import Final

from orbitmq.broker.consumer_manager import ClientChannelInfo
from orbitmq.common.clock import SYSTEM_CLOCK, Clock
from orbitmq.remoting import ChannelContext

log = logging.getLogger(__name__)

#: A producer channel silent this long is dropped by the scan.
PRODUCER_CHANNEL_EXPIRED_TIMEOUT_MS: Final = 1000 * 120


class ProducerManager:
    """Owns the table producer group -> {channel id: ``ClientChannelInfo``}, fed by
    heartbeats and emptied by UNREGISTER_CLIENT, closed channels and the expiry scan.
    Not thread-safe: use from the broker's event loop only."""

    def __init__(self, *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._table: dict[str, dict[int, ClientChannelInfo]] = {}
        self._clock = clock
        #: Turns the choice among a group's channels (RocketMQ picks at random).
        self._next_pick = 0

    def groups(self) -> list[str]:
        return list(self._table)

    def get_group_channel_table(self, group: str) -> dict[int, ClientChannelInfo]:
        """A copy of the group's channels by channel id (empty when unknown)."""
        return dict(self._table.get(group, {}))

    def find_channel(self, client_id: str) -> ChannelContext | None:
        for channels in self._table.values():
            for info in channels.values():
                if info.client_id == client_id and info.channel.is_active:
                    return info.channel
        return None

    def get_available_channel(self, group: str) -> ChannelContext | None:
        """One active channel of the group, a different one each call (round robin); None
        when the group has no active producer."""
        active = [i.channel for i in self._table.get(group, {}).values() if i.channel.is_active]
        if not active:
            return None
        self._next_pick += 1
        return active[self._next_pick % len(active)]

    def register_producer(self, group: str, client_channel_info: ClientChannelInfo) -> None:
        channels = self._table.setdefault(group, {})
        channel_id = client_channel_info.channel.id
        found = channels.get(channel_id)
        if found is None:
            channels[channel_id] = client_channel_info
            found = client_channel_info
            log.info("new producer connected, group: %s channel: %s", group, found.client_id)
        found.last_update_timestamp_ms = self._clock.now_ms()

    def unregister_producer(self, group: str, channel: ChannelContext) -> None:
        channels = self._table.get(group)
        if channels is None:
            return
        old = channels.pop(channel.id, None)
        if old is not None:
            log.info("unregister a producer[%s] from groupChannelTable %s", group, old.client_id)
        if not channels:
            del self._table[group]
            log.info("unregister a producer group[%s] from groupChannelTable", group)

    def do_channel_close_event(self, channel: ChannelContext) -> None:
        for group, channels in list(self._table.items()):
            info = channels.pop(channel.id, None)
            if info is not None:
                log.info(
                    "remove not active channel[%s] from ProducerManager groupChannelTable, "
                    "producer group: %s",
                    info.client_id,
                    group,
                )
            if not channels:
                del self._table[group]

    def scan_not_active_channel(self) -> list[ChannelContext]:
        now_ms = self._clock.now_ms()
        dropped: list[ChannelContext] = []
        for group, channels in list(self._table.items()):
            for channel_id, info in list(channels.items()):
                if now_ms - info.last_update_timestamp_ms > PRODUCER_CHANNEL_EXPIRED_TIMEOUT_MS:
                    del channels[channel_id]
                    log.warning(
                        "SCAN: remove expired channel[%s] from ProducerManager groupChannelTable, "
                        "producer group name: %s",
                        info.channel.remote_address,
                        group,
                    )
                    info.channel.close()
                    dropped.append(info.channel)
            if not channels:
                del self._table[group]
        return dropped
