"""The broker's consumer group table (RocketMQ's ``SubscriptionGroupManager``), persisted as
subscriptionGroup.json."""

from __future__ import annotations

import logging
from typing import ClassVar, Final

from orbitmq.broker.config_manager import ConfigManager
from orbitmq.broker.subscription_group_config import (
    CID_ONSAPI_OWNER_GROUP,
    CID_ONSAPI_PERMISSION_GROUP,
    CID_ONSAPI_PULL_GROUP,
    FILTERSRV_CONSUMER_GROUP,
    ONS_HTTP_PROXY_GROUP,
    SELF_TEST_CONSUMER_GROUP,
    SubscriptionGroupWrapper,
    is_sys_consumer_group,
)
from orbitmq.common import TOOLS_CONSUMER_GROUP
from orbitmq.protocol.body import DataVersion, SubscriptionGroupConfig

log = logging.getLogger(__name__)

#: ``MessageStoreConfig.config_file(SUBSCRIPTION_GROUP_CONFIG_NAME)``.
SUBSCRIPTION_GROUP_CONFIG_NAME: Final = "subscriptionGroup"

#: The groups RocketMQ 4.9.8 creates at start (all with the default settings: RocketMQ sets
#: consumeBroadcastEnable on the ONS ones, which is already the default).
SYSTEM_GROUPS: Final = (
    TOOLS_CONSUMER_GROUP,
    FILTERSRV_CONSUMER_GROUP,
    SELF_TEST_CONSUMER_GROUP,
    ONS_HTTP_PROXY_GROUP,
    CID_ONSAPI_PULL_GROUP,
    CID_ONSAPI_PERMISSION_GROUP,
    CID_ONSAPI_OWNER_GROUP,
)


class SubscriptionGroupManager(ConfigManager[SubscriptionGroupConfig]):
    """Owns the group table (name -> SubscriptionGroupConfig), its DataVersion and
    subscriptionGroup.json (``MessageStoreConfig.config_file("subscriptionGroup")``).

    Safe from several threads (``ConfigManager``'s lock). Changes save the file at once (a
    blocking fsync; asyncio callers may use a worker thread).
    """

    KIND: ClassVar[str] = "subscription group"

    def _add_system_configs(self) -> None:
        for name in SYSTEM_GROUPS:
            self._table[name] = SubscriptionGroupConfig(group_name=name)

    def _decode(self, content: bytes) -> tuple[dict[str, SubscriptionGroupConfig], DataVersion]:
        wrapper = SubscriptionGroupWrapper.from_json(content)
        return wrapper.subscription_group_table, wrapper.data_version

    def _encode(self) -> SubscriptionGroupWrapper:
        return SubscriptionGroupWrapper(self._table, self.data_version)

    def group_names(self) -> set[str]:
        return self._names()

    def get(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config, without creating it."""
        return self._table.get(group)

    def snapshot(self) -> SubscriptionGroupWrapper:
        """A copy of the table and its version (GET_ALL_SUBSCRIPTIONGROUP_CONFIG)."""
        with self._lock:
            return SubscriptionGroupWrapper.from_value(
                SubscriptionGroupWrapper(self._table, self.data_version).to_value()
            )

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's config; created with RocketMQ's defaults when missing and
        autoCreateSubscriptionGroup is on or the group is a CID_RMQ_SYS_ one; else None."""
        with self._lock:
            found = self._table.get(group)
            if found is not None:
                return found
            if not (
                self._broker_config.auto_create_subscription_group or is_sys_consumer_group(group)
            ):
                return None
            created = SubscriptionGroupConfig(group_name=group)
            self._table[group] = created
            self._bump_and_persist()
        log.info("auto-created subscription group %s", created)
        return created

    def update_subscription_group_config(self, config: SubscriptionGroupConfig) -> None:
        """Create or replace a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)."""
        if not config.group_name:
            raise ValueError("groupName: a subscription group needs a name")
        with self._lock:
            old = self._table.get(config.group_name)
            self._table[config.group_name] = config
            self._bump_and_persist()
        log.info("%s subscription group %s", "updated" if old else "created", config)

    def disable_consume(self, group: str) -> None:
        """Stop a group consuming (as RocketMQ: the version moves, the file waits)."""
        with self._lock:
            found = self._table.get(group)
            if found is not None:
                found.consume_enable = False
                self.data_version.next_version(self._clock.now_ms())

    def delete_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        """Remove a group; the removed config, or None when there was none."""
        return self._remove(group)
