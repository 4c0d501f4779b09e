"""The broker's topic table (RocketMQ's ``TopicConfigManager``), persisted as topics.json.

Loading reads the main file, else its ``.bak``, as standard JSON or fastjson's; a file that
exists but cannot be read, with no readable backup, is a ConfigError rather than a silently
empty table (``ConfigFile.load_with``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import ClassVar, Final, TypeVar

from orbitmq.broker.broker_config import BrokerConfig
from orbitmq.broker.config_manager import ConfigManager
from orbitmq.common import OS_FILE_SYSTEM, SYSTEM_CLOCK, Clock, FileSystem
from orbitmq.common.errors import OrbitError
from orbitmq.common.topic import (
    AUTO_CREATE_TOPIC_KEY_TOPIC,
    RMQ_SYS_BENCHMARK_TOPIC,
    RMQ_SYS_OFFSET_MOVED_EVENT,
    RMQ_SYS_SCHEDULE_TOPIC,
    RMQ_SYS_SELF_TEST_TOPIC,
    RMQ_SYS_WHEEL_TIMER_TOPIC,
    retry_topic,
    topic_problem,
)
from orbitmq.common.topic_attributes import alter_attributes
from orbitmq.common.topic_message_type import TopicMessageType
from orbitmq.protocol.body import Body, DataVersion, TopicConfig
from orbitmq.protocol.body import TopicConfigSerializeWrapper as TopicConfigWrapper
from orbitmq.protocol.perm_name import (
    PERM_INHERIT,
    PERM_READ,
    PERM_WRITE,
    is_inherited,
    is_readable,
    is_writeable,
)

log = logging.getLogger(__name__)

#: ``MessageStoreConfig.config_file(TOPICS_CONFIG_NAME)`` is topics.json.
TOPICS_CONFIG_NAME: Final = "topics"
#: SCHEDULE_TOPIC_XXXX has one queue per delay level (RocketMQ's SCHEDULE_TOPIC_QUEUE_NUM).
SCHEDULE_TOPIC_QUEUE_NUM: Final = 18
BENCHMARK_TOPIC_QUEUE_NUM: Final = 1024
#: ``<cluster>_REPLY_TOPIC``: where request-reply answers go (``MixAll.REPLY_TOPIC_POSTFIX``).
REPLY_TOPIC_POSTFIX: Final = "REPLY_TOPIC"

B = TypeVar("B", bound=Body)


class InvalidTopicError(OrbitError, ValueError):
    """A topic name RocketMQ's TopicValidator refuses; the message says why."""


def new_topic_config(
    topic: str, queue_nums: int, perm: int = PERM_READ | PERM_WRITE
) -> TopicConfig:
    return TopicConfig(topic, read_queue_nums=queue_nums, write_queue_nums=queue_nums, perm=perm)


class TopicConfigManager(ConfigManager[TopicConfig]):
    """Owns the broker's topic table (name -> TopicConfig), its DataVersion and topics.json.

    Safe from several threads (``ConfigManager``'s lock). Saving writes and fsyncs a file,
    so asyncio code should call the mutating methods from a worker thread or accept a short
    block. TopicConfigs handed out are the live ones: callers read them, and change topics
    only through this manager.
    """

    KIND: ClassVar[str] = "topic"

    def __init__(
        self,
        broker_config: BrokerConfig,
        config_path: str | os.PathLike[str],
        *,
        clock: Clock = SYSTEM_CLOCK,
        fs: FileSystem = OS_FILE_SYSTEM,
        on_new_topic: Callable[[TopicConfig], None] | None = None,
    ) -> None:
        """``config_path`` is ``MessageStoreConfig.config_file("topics")``. ``on_new_topic`` is
        called (outside the lock) after a send creates a topic, so the broker can register
        with the name servers at once as RocketMQ does."""
        self._on_new_topic = on_new_topic
        self.system_topics: set[str] = set()
        super().__init__(broker_config, config_path, clock=clock, fs=fs)

    def _add_system_configs(self) -> None:
        """The topics RocketMQ 4.9.8's TopicConfigManager constructor creates."""
        cfg = self._broker_config
        rw = PERM_READ | PERM_WRITE
        topics = [new_topic_config(RMQ_SYS_SELF_TEST_TOPIC, 1)]
        if cfg.auto_create_topic_enable:
            topics.append(
                new_topic_config(
                    AUTO_CREATE_TOPIC_KEY_TOPIC, cfg.default_topic_queue_nums, rw | PERM_INHERIT
                )
            )
        topics.append(new_topic_config(RMQ_SYS_BENCHMARK_TOPIC, BENCHMARK_TOPIC_QUEUE_NUM))
        cluster_perm = PERM_INHERIT | (rw if cfg.cluster_topic_enable else 0)
        # The cluster topic keeps TopicConfig's default 16 queues, as in RocketMQ.
        topics.append(TopicConfig(cfg.broker_cluster_name, perm=cluster_perm))
        broker_perm = PERM_INHERIT | (rw if cfg.broker_topic_enable else 0)
        topics.append(new_topic_config(cfg.broker_name, 1, broker_perm))
        topics.append(new_topic_config(RMQ_SYS_OFFSET_MOVED_EVENT, 1))
        topics.append(new_topic_config(RMQ_SYS_SCHEDULE_TOPIC, SCHEDULE_TOPIC_QUEUE_NUM))
        if cfg.trace_topic_enable:
            # One read and one write queue, as RocketMQ 4.9.8 creates it.
            topics.append(new_topic_config(cfg.msg_trace_topic_name, 1))
        # Timer messages wait in its one queue (RocketMQ 5 creates it when timerWheelEnable).
        topics.append(new_topic_config(RMQ_SYS_WHEEL_TIMER_TOPIC, 1))
        topics.append(new_topic_config(f"{cfg.broker_cluster_name}_{REPLY_TOPIC_POSTFIX}", 1))
        for topic_config in topics:
            self._table[topic_config.topic_name] = topic_config
            self.system_topics.add(topic_config.topic_name)

    # -- persistence ---------------------------------------------------------------------

    def _decode(self, content: bytes) -> tuple[dict[str, TopicConfig], DataVersion]:
        wrapper = TopicConfigWrapper.from_json(content)
        return wrapper.topic_config_table, wrapper.data_version

    def _encode(self) -> TopicConfigWrapper:
        return self._wrapper(copy=False)

    def _wrapper(self, *, copy: bool) -> TopicConfigWrapper:
        if not copy:
            return TopicConfigWrapper(self._table, self.data_version)
        return TopicConfigWrapper(
            {name: dataclasses.replace(tc) for name, tc in self._table.items()},
            DataVersion(self.data_version.timestamp, self.data_version.counter),
        )

    # -- queries -------------------------------------------------------------------------

    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self._table.get(topic)

    def topic_names(self) -> set[str]:
        return self._names()

    @property
    def mixed_message_type_enabled(self) -> bool:
        """Whether a topic may be made MIXED (broker.conf ``enableMixedMessageType``)."""
        return self._broker_config.enable_mixed_message_type

    def topic_message_type(self, topic: str) -> TopicMessageType:
        """The message type ``topic`` accepts (its ``message.type``; NORMAL when unset);
        UNSPECIFIED when there is no such topic, so that every send to it fails the type
        check, as RocketMQ 5's proxy answers."""
        topic_config = self._table.get(topic)
        if topic_config is None:
            return TopicMessageType.UNSPECIFIED
        return topic_config.topic_message_type

    def is_order_topic(self, topic: str) -> bool:
        topic_config = self._table.get(topic)
        return topic_config is not None and topic_config.order

    def build_topic_config_serialize_wrapper(self) -> TopicConfigWrapper:
        """A copy of the table and its version for REGISTER_BROKER and GET_ALL_TOPIC_CONFIG.

        As RocketMQ's registerBrokerAll does, when brokerPermission lacks read or write every
        topic is reported with the broker's permission."""
        with self._lock:
            wrapper = self._wrapper(copy=True)
        broker_perm = self._broker_config.broker_permission
        if not (is_readable(broker_perm) and is_writeable(broker_perm)):
            for topic_config in wrapper.topic_config_table.values():
                topic_config.perm = broker_perm
        return wrapper

    # -- changes -------------------------------------------------------------------------

    def update_topic_config(
        self, topic_config: TopicConfig, modification: Mapping[str, str] | None = None
    ) -> None:
        """Create or replace a topic (UPDATE_AND_CREATE_TOPIC); raises InvalidTopicError.

        Its attributes are the ones it has (``topic_config.attributes`` when it is new)
        changed by ``modification``, signed keys as ``parse_attributes_modification``
        gives them (RocketMQ 5's ``alterCurrentAttributes``); raises TopicAttributeError
        when the change is refused, leaving the topic as it was."""
        _check_topic(topic_config.topic_name)
        with self._lock:
            old = self._table.get(topic_config.topic_name)
            current = topic_config.attributes if old is None else old.attributes
            topic_config.attributes = alter_attributes(old is None, current, modification or {})
            self._table[topic_config.topic_name] = topic_config
            log.info("%s topic config %s", "update" if old else "create", topic_config)
            self._bump_and_persist()

    def delete_topic_config(self, topic: str) -> TopicConfig | None:
        """Remove a topic; the removed config, or None when there was none."""
        return self._remove(topic)

    def update_order_topic_config(self, order_topics: Iterable[str]) -> None:
        """Mark exactly ``order_topics`` as ordered (the name server's ORDER_TOPIC_CONFIG)."""
        wanted = set(order_topics)
        with self._lock:
            changed = False
            for name, topic_config in self._table.items():
                order = name in wanted
                if topic_config.order != order:
                    topic_config.order = order
                    changed = True
            if changed:
                self._bump_and_persist()

    def create_topic_in_send_message_method(
        self,
        topic: str,
        default_topic: str,
        remote_addr: str,
        client_default_topic_queue_nums: int,
        topic_sys_flag: int,
    ) -> TopicConfig | None:
        """The topic, created from ``default_topic`` (TBW102) when missing and that topic
        may be inherited from; None when it cannot be created. Raises InvalidTopicError."""
        _check_topic(topic)
        with self._lock:
            existing = self._table.get(topic)
            if existing is not None:
                return existing
            default = self._table.get(default_topic)
            if (
                default is not None
                and default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC
                and not self._broker_config.auto_create_topic_enable
            ):
                # A TBW102 loaded from an older topics.json stops being inheritable.
                default.perm = PERM_READ | PERM_WRITE
            if default is None or not is_inherited(default.perm):
                why = "is missing" if default is None else f"has perm {default.perm}, no inherit"
                log.warning(
                    "cannot create topic %s for %s: %s %s", topic, remote_addr, default_topic, why
                )
                return None
            queue_nums = max(0, min(client_default_topic_queue_nums, default.write_queue_nums))
            created = TopicConfig(
                topic,
                read_queue_nums=queue_nums,
                write_queue_nums=queue_nums,
                perm=default.perm & ~PERM_INHERIT,
                topic_filter_type=default.topic_filter_type,
                topic_sys_flag=topic_sys_flag,
            )
            self._table[topic] = created
            self._bump_and_persist()
        log.info("created topic %s from %s for producer %s", created, default_topic, remote_addr)
        self._notify(created)
        return created

    def create_topic_in_send_message_back_method(
        self,
        topic: str,
        client_default_topic_queue_nums: int,
        perm: int,
        topic_sys_flag: int,
    ) -> TopicConfig:
        """The topic, created with these settings when missing (retry topics, DLQ topics)."""
        _check_topic(topic)
        with self._lock:
            existing = self._table.get(topic)
            if existing is not None:
                return existing
            created = TopicConfig(
                topic,
                read_queue_nums=client_default_topic_queue_nums,
                write_queue_nums=client_default_topic_queue_nums,
                perm=perm,
                topic_sys_flag=topic_sys_flag,
            )
            self._table[topic] = created
            self._bump_and_persist()
        log.info("created topic %s", created)
        self._notify(created)
        return created

    def create_retry_topic(
        self, group: str, retry_queue_nums: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """``%RETRY%<group>``, as RocketMQ creates it on a consumer's heartbeat: the group's
        retryQueueNums queues, read and write."""
        return self.create_topic_in_send_message_back_method(
            retry_topic(group), retry_queue_nums, PERM_READ | PERM_WRITE, topic_sys_flag
        )

    def _notify(self, created: TopicConfig) -> None:
        if self._on_new_topic is not None:
            self._on_new_topic(created)


def _check_topic(topic: str) -> None:
    problem = topic_problem(topic)
    if problem is not None:
        raise InvalidTopicError(problem)
